import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hooksServiceIdentifier } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { sharedDatabase, wf } from './runs.fixtures.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

/**
 * Outbound webhooks over real sockets: a local receiver (node:http) verifies each delivery with
 * the `standardwebhooks` reference library; failures are retried with backoff, logged with their
 * status codes, survive a host restart, and can be redelivered.
 */

type Json = Record<string, any>;

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  path: string;
}

/** A receiver answering each request with the next status of its script (then `fallback`). */
class Receiver {
  readonly received: Received[] = [];
  script: number[] = [];
  fallback = 200;
  private server!: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        this.received.push({ headers: request.headers, body, path: request.url ?? '/' });
        response.statusCode = this.script.shift() ?? this.fallback;
        response.setHeader('content-type', 'text/plain');
        response.end('receiver body that must never be shown back');
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const ok = wf.doc(wf.input('n', { type: 'number', required: true }), wf.code('calc', 'return inputs.n + 1;'), wf.output('out', '{{ calc }}'));
const failing = wf.doc(wf.code('boom', "throw new Error('nope');"));
const asking = wf.doc(wf.ask('colour', 'Which colour?'), wf.output('out', '{{ colour }}'));
let counter = 0;

describe.each(testDatabases())('outbound webhooks on $name', (base) => {
  const db = sharedDatabase(base);
  const receiver = new Receiver();
  let a: TestHost;
  let t: TestHost;
  let owner: Actor;
  let member: Actor;
  let projectId: string;
  let teamId: string;
  const config = () => ({
    network: { allowPrivateNetworks: [String(receiver.port)] },
    triggers: { outbound: { backoffBaseMs: 150, backoffMaxMs: 600, pollMs: 100, maxAttempts: 4, timeoutMs: 2_000 } },
  });

  beforeAll(async () => {
    await receiver.start();
    a = await startTestHost(db, 'node', { config: config() });
    t = a;
    owner = await actor(t);
    member = await actor(t);
    teamId = (await t.request('POST', '/teams', { token: owner.token, body: { name: `Hooks ${++counter}-${randomUUID()}` } })).body.id;
    expect((await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } })).status).toBe(201);
    projectId = (await createProject(t, owner.token, { access: 'private', teamId })).id;
  });
  afterAll(async () => {
    await a?.close();
    await receiver.close();
    await db.cleanup();
  });

  async function deployed(content: unknown): Promise<string> {
    const bid = (await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Out ${++counter}`, type: 'workflow', content } })).body.id;
    expect((await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'private' } })).status).toBe(201);
    return bid;
  }

  async function subscribe(path: string, events: string[], extra: Json = {}): Promise<Json> {
    const r = await t.request('POST', '/webhooks/subscriptions', { token: owner.token, body: { url: `http://127.0.0.1:${receiver.port}${path}`, events, ...extra } });
    expect(r.status, r.text).toBe(201);
    expect(r.body.secret).toMatch(/^whsec_/);
    return r.body;
  }

  const deliveries = async (id: string): Promise<Json[]> => (await t.request('GET', `/webhooks/subscriptions/${id}/deliveries?size=100`, { token: owner.token })).body.items;

  /** Checks a received request with the reference library and answers its payload. */
  function verified(secret: string, received: Received): Json {
    const headers = { 'webhook-id': String(received.headers['webhook-id']), 'webhook-timestamp': String(received.headers['webhook-timestamp']), 'webhook-signature': String(received.headers['webhook-signature']) };
    return new Webhook(secret).verify(received.body, headers) as Json;
  }

  it('a finished run is POSTed signed; failures are retried with backoff and logged with their status codes; same webhook-id on each attempt', async () => {
    const path = `/ok-${randomUUID()}`;
    const sub = await subscribe(path, ['run.completed', 'run.failed']);
    receiver.script = [500, 503];
    const bid = await deployed(ok);
    const run = await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false, inputs: { n: 41 } } });
    expect(run.body.status).toBe('completed');
    const [delivery] = await eventually(() => deliveries(sub.id), (items) => items[0]?.status === 'succeeded', 'a delivered event');
    expect(delivery).toMatchObject({ event: 'run.completed', status: 'succeeded', attempts: 3, lastStatusCode: 200, nextAttemptAt: null });
    expect(delivery!.log.map((l: Json) => l.statusCode)).toEqual([500, 503, 200]);
    expect(delivery!.log.map((l: Json) => l.error)).toEqual(['answered 500', 'answered 503', null]);
    expect(JSON.stringify(delivery)).not.toContain('must never be shown');
    const got = receiver.at(path);
    expect(got).toHaveLength(3);
    expect(new Set(got.map((g) => g.headers['webhook-id']))).toEqual(new Set([delivery!.messageId]));
    // Backoff: the attempts are spaced by at least the base delay, then twice it.
    const times = delivery!.log.map((l: Json) => Date.parse(l.at));
    expect(times[1] - times[0]).toBeGreaterThanOrEqual(150);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(300);
    const payload = verified(sub.secret, got[2]!);
    expect(payload).toMatchObject({ type: 'run.completed', data: { runId: run.body.runId, documentId: bid, status: 'completed', output: 42, teamId, version: '1' } });
    expect(delivery!.payload).toEqual(payload);

    // A failed run, to the same subscription.
    const bad = await deployed(failing);
    const failed = await t.request('POST', `/block/${bad}/api`, { token: owner.token, body: { stream: false } });
    expect(failed.body.status).toBe('failed');
    const items = await eventually(() => deliveries(sub.id), (list) => list.some((d) => d.event === 'run.failed' && d.status === 'succeeded'), 'run.failed');
    expect(items.find((d) => d.event === 'run.failed')!.payload.data).toMatchObject({ runId: failed.body.runId, status: 'failed', error: { code: expect.any(String) } });
  });

  it('run.waiting, conversation turns and budget events reach the subscriptions that asked for them, and only those', async () => {
    const path = `/mixed-${randomUUID()}`;
    const sub = await subscribe(path, ['run.waiting', 'conversation.turn_finished', 'budget.reached'], { teamId });
    const bid = await deployed(asking);
    const run = await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false } });
    expect(run.body.status).toBe('waiting');
    // The conversations module fires turnFinished, and an embedder's billing may fire budget.reached;
    // here they are fired as they would be (a run budget's budget.reached: runs-budgets.int.spec.ts).
    const hooks = a.kernel.get(hooksServiceIdentifier);
    await hooks.emit('conversation.turnFinished', { conversationId: randomUUID(), messageId: randomUUID(), userId: member.userId, teamId, status: 'completed', usage: { inputTokens: 3, outputTokens: 4, credits: 1 } });
    await hooks.emit('budget.reached', { teamId, key: 'monthly:2026-11', budget: 100, spent: 101, period: '2026-11' });
    await hooks.emit('budget.reached', { teamId, key: 'monthly:2026-11', budget: 100, spent: 101, period: '2026-11' });
    // Another team's budget is not this subscription's.
    await hooks.emit('budget.reached', { teamId: randomUUID(), key: 'x', budget: 1, spent: 1, period: null });
    const items = await eventually(() => deliveries(sub.id), (list) => list.length === 3 && list.every((d) => d.status === 'succeeded'), 'three deliveries');
    expect(items.map((d) => d.event).sort()).toEqual(['budget.reached', 'conversation.turn_finished', 'run.waiting']);
    expect(items.find((d) => d.event === 'run.waiting')!.payload.data).toMatchObject({ runId: run.body.runId, blockId: 'ask-colour', question: 'Which colour?' });
    for (const got of receiver.at(path)) expect(verified(sub.secret, got).type).toBeTypeOf('string');
    // Only managers subscribe a team; destinations the guard refuses are refused.
    const asMember = await t.request('POST', '/webhooks/subscriptions', { token: member.token, body: { url: `http://127.0.0.1:${receiver.port}/x`, events: ['run.completed'], teamId } });
    expect(asMember.status).toBe(403);
    expect(asMember.body.error).toBe('team_role_required');
    for (const url of ['http://10.1.2.3/hook', `http://127.0.0.1:${receiver.port + 1}/`, 'ftp://example.com/', 'http://user:pw@example.com/']) {
      const refused = await t.request('POST', '/webhooks/subscriptions', { token: owner.token, body: { url, events: ['run.completed'] } });
      expect(refused.status, url).toBe(422);
      expect(refused.body.error).toBe('invalid_webhook_url');
    }
  });

  it('a destination refused when connecting is logged as such; out of attempts is failed; redelivery sends the same message again', async () => {
    const refusedSub = (await t.request('POST', '/webhooks/subscriptions', { token: owner.token, body: { url: `http://localhost:${receiver.port + 1}/no`, events: ['run.completed'] } })).body;
    const path = `/down-${randomUUID()}`;
    const sub = await subscribe(path, ['run.completed']);
    receiver.fallback = 500;
    try {
      const bid = await deployed(ok);
      await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false, inputs: { n: 1 } } });
      const [failed] = await eventually(() => deliveries(sub.id), (items) => items[0]?.status === 'failed', 'a failed delivery');
      expect(failed!.attempts).toBe(4);
      expect(failed!.log.map((l: Json) => l.statusCode)).toEqual([500, 500, 500, 500]);
      const [refused] = await eventually(() => deliveries(refusedSub.id), (items) => items[0]?.status === 'failed', 'a refused delivery');
      expect(refused!.log.every((l: Json) => l.error === 'destination_refused' && l.statusCode === null)).toBe(true);

      receiver.fallback = 200;
      const again = await t.request('POST', `/webhooks/subscriptions/${sub.id}/deliveries/${failed!.id}/redeliver`, { token: owner.token });
      expect(again.status).toBe(202);
      const done = await eventually(() => t.request('GET', `/webhooks/subscriptions/${sub.id}/deliveries/${failed!.id}`, { token: owner.token }), (r) => r.body.status === 'succeeded', 'the redelivery');
      expect(done.body.log.map((l: Json) => l.statusCode)).toEqual([500, 500, 500, 500, 200]);
      const got = receiver.at(path);
      expect(got).toHaveLength(5);
      expect(new Set(got.map((g) => g.headers['webhook-id'])).size).toBe(1);
      expect(verified(sub.secret, got[4]!).type).toBe('run.completed');
    } finally {
      receiver.fallback = 200;
    }
    expect((await t.request('POST', `/webhooks/subscriptions/${sub.id}/deliveries/${randomUUID()}/redeliver`, { token: owner.token })).status).toBe(404);
    expect((await t.request('GET', `/webhooks/subscriptions/${sub.id}`, { token: member.token })).status).toBe(404);
  });

  it('pending deliveries survive a restart: another host on the same database delivers them', async () => {
    const path = `/restart-${randomUUID()}`;
    const sub = await subscribe(path, ['run.completed']);
    receiver.fallback = 503;
    const bid = await deployed(ok);
    await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false, inputs: { n: 2 } } });
    await eventually(() => deliveries(sub.id), (items) => items[0]?.attempts >= 1, 'a first failed attempt');
    await a.close();
    receiver.fallback = 200;
    a = await startTestHost(db, 'node', { config: config() });
    t = a;
    const [delivery] = await eventually(() => deliveries(sub.id), (items) => items[0]?.status === 'succeeded', 'delivery after the restart');
    expect(delivery!.log.at(-1).statusCode).toBe(200);
    expect(verified(sub.secret, receiver.at(path).at(-1)!).type).toBe('run.completed');

    // CRUD: change, rotate (the next delivery is signed with the new secret), disable, delete.
    const rotated = await t.request('PATCH', `/webhooks/subscriptions/${sub.id}`, { token: owner.token, body: { rotateSecret: true, description: 'rotated' } });
    expect(rotated.body).toMatchObject({ description: 'rotated', secret: expect.stringMatching(/^whsec_/) });
    expect((await t.request('GET', '/webhooks/subscriptions', { token: owner.token })).body.items.map((s: Json) => s.id)).toContain(sub.id);
    await t.request('POST', `/block/${bid}/api`, { token: owner.token, body: { stream: false, inputs: { n: 3 } } });
    await eventually(() => deliveries(sub.id), (items) => items.filter((d) => d.status === 'succeeded').length === 2, 'the second delivery');
    expect(verified(rotated.body.secret, receiver.at(path).at(-1)!).type).toBe('run.completed');
    expect(() => verified(sub.secret, receiver.at(path).at(-1)!)).toThrow();
    expect((await t.request('DELETE', `/webhooks/subscriptions/${sub.id}`, { token: owner.token })).status).toBe(204);
    expect((await t.request('GET', `/webhooks/subscriptions/${sub.id}/deliveries`, { token: owner.token })).status).toBe(404);
  });
});
