import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, createProject, eventually, type Actor } from './documents.fixtures.js';
import { wf } from './runs.fixtures.js';

/**
 * Inbound webhooks of deployments over real sockets: senders sign with the `standardwebhooks`
 * package (the Standard Webhooks reference library) or present a bearer secret; each delivery
 * starts one run of the deployed version, a repeated webhook-id (also in parallel) starts none.
 */

type Json = Record<string, any>;

const flow = (label: string) =>
  wf.doc(
    wf.input('n', { type: 'number', required: true }),
    wf.input('tag', { type: 'string' }),
    wf.code('calc', `return { label: '${label}', twice: inputs.n * 2, tag: inputs.tag ?? '' };`),
    wf.output('out', '{{ calc.label }}={{ calc.twice }}{{ calc.tag }}'),
  );

let counter = 0;

describe.each(testDatabases())('inbound webhooks on $name', (db) => {
  let host: TestHost;
  let t: TestHost;
  let owner: Actor;
  let outsider: Actor;
  let bid: string;

  beforeAll(async () => {
    host = await startTestHost(db, 'node');
    t = host;
    owner = await actor(t);
    outsider = await actor(t);
    const projectId = (await createProject(t, owner.token, { access: 'private' })).id;
    const created = await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Hooked ${++counter}`, type: 'workflow', content: flow('v1') } });
    bid = created.body.id;
    // A private deployment: the trigger's secret is what lets senders in, not the deployment's access.
    expect((await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access: 'private' } })).status).toBe(201);
  });
  afterAll(() => host?.close());

  async function trigger(body: Json): Promise<Json> {
    const r = await t.request('POST', `/block/${bid}/webhooks`, { token: owner.token, body });
    expect(r.status, r.text).toBe(201);
    return r.body;
  }

  /** A delivery signed by the reference library. */
  function signed(secret: string, payload: string, options: { id?: string; at?: Date } = {}): Record<string, string> {
    const id = options.id ?? `msg_${randomUUID()}`;
    const at = options.at ?? new Date();
    const seconds = Math.floor(at.getTime() / 1000);
    return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': new Webhook(secret).sign(id, new Date(seconds * 1000), payload) };
  }

  const deliver = (path: string, raw: string, headers: Record<string, string>) => t.request('POST', path, { raw, headers });

  async function finished(runId: string): Promise<Json> {
    const r = await eventually(() => t.request('GET', `/documents/${bid}/runs/${runId}`, { token: owner.token }), (r) => ['completed', 'failed'].includes(r.body.status), 'run end');
    return r.body;
  }

  const runsOfBlock = async () => (await t.request('GET', `/documents/${bid}/runs?size=100`, { token: owner.token })).body.items as Json[];

  it('a signed delivery starts a run of the deployed version with mapped inputs; a repeated webhook-id starts none', async () => {
    const hook = await trigger({ name: 'orders', mapping: { n: 'body.order.count', tag: 'header.x-tag' } });
    expect(hook).toMatchObject({ verification: 'standard', answer: 'accepted', path: `/hooks/${hook.id}`, enabled: true });
    expect(hook.secret).toMatch(/^whsec_/);
    // The draft changes; the webhook runs the deployed version.
    expect((await t.request('PUT', `/block/${bid}`, { token: owner.token, body: { content: flow('draft') } })).status).toBe(200);

    const payload = JSON.stringify({ order: { count: 21 } });
    const headers = { ...signed(hook.secret, payload), 'x-tag': '!' };
    const first = await deliver(hook.path, payload, headers);
    expect(first.status, first.text).toBe(202);
    expect(first.body).toMatchObject({ documentId: bid, status: 'accepted', duplicate: false });
    const run = await finished(first.body.runId);
    expect(run).toMatchObject({ status: 'completed', output: 'v1=42!', source: 'webhook', version: '1', inputs: { n: 21, tag: '!' } });

    const again = await deliver(hook.path, payload, headers);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ runId: first.body.runId, duplicate: true });

    // Parallel duplicates of a new delivery: every answer names one run, and one run exists.
    const before = (await runsOfBlock()).length;
    const burst = signed(hook.secret, payload);
    const answers = await Promise.all(Array.from({ length: 6 }, () => deliver(hook.path, payload, burst)));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(202));
    expect(new Set(answers.map((a) => a.body.runId)).size).toBe(1);
    expect(answers.filter((a) => !a.body.duplicate)).toHaveLength(1);
    await finished(answers[0]!.body.runId);
    expect((await runsOfBlock()).length).toBe(before + 1);
  });

  it('refuses missing, forged, altered and stale signatures with 401 and starts nothing', async () => {
    const hook = await trigger({ mapping: { n: 'body.n' } });
    const before = (await runsOfBlock()).length;
    const payload = '{"n":1}';
    const cases: Array<[Record<string, string>, string, string]> = [
      [{ 'content-type': 'application/json' }, payload, 'webhook_signature_missing'],
      [signed('whsec_' + Buffer.alloc(32, 7).toString('base64'), payload), payload, 'webhook_signature_invalid'],
      [signed(hook.secret, payload), '{"n":2}', 'webhook_signature_invalid'],
      [signed(hook.secret, payload, { at: new Date(Date.now() - 10 * 60_000) }), payload, 'webhook_timestamp_out_of_range'],
      [signed(hook.secret, payload, { at: new Date(Date.now() + 10 * 60_000) }), payload, 'webhook_timestamp_out_of_range'],
    ];
    for (const [headers, body, code] of cases) {
      const r = await deliver(hook.path, body, headers);
      expect(r.status, code).toBe(401);
      expect(r.body.error).toBe(code);
    }
    expect((await runsOfBlock()).length).toBe(before);
    expect((await deliver(`/hooks/${randomUUID()}`, payload, signed(hook.secret, payload))).status).toBe(404);
  });

  it('bearer triggers in wait mode answer the run\'s result; form, query and header mapping; a refused delivery can be retried with its id', async () => {
    const hook = await trigger({ verification: 'bearer', answer: 'wait', waitSeconds: 20, mapping: { n: 'form.count', tag: 'query.tag' } });
    expect(hook.secret).toMatch(/^trw_/);
    const form = (count: string, id?: string) =>
      deliver(`${hook.path}?tag=%23form`, `count=${count}&other=x`, { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${hook.secret}`, ...(id ? { 'webhook-id': id } : {}) });
    // Form fields are text: the number input refuses "seven", and the webhook-id stays free.
    const id = `msg_${randomUUID()}`;
    const refused = await form('seven', id);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_inputs');
    const wrong = await deliver(hook.path, 'count=1', { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Bearer nope' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('webhook_secret_invalid');

    // A JSON number through the body works in wait mode.
    const json = await deliver(`${hook.path}?tag=%23q`, '{"count": 4}', { 'content-type': 'application/json', authorization: `Bearer ${hook.secret}` });
    expect(json.status).toBe(400); // form.count reads form fields only when the body is a form: here the input is missing
    expect(json.body.error).toBe('invalid_inputs');
    const changed = await t.request('PATCH', `/block/${bid}/webhooks/${hook.id}`, { token: owner.token, body: { mapping: { n: 'body.count', tag: 'query.tag' } } });
    expect(changed.status).toBe(200);
    expect(changed.body.secret).toBeUndefined();
    const done = await deliver(`${hook.path}?tag=%23q`, '{"count": 4}', { 'content-type': 'application/json', authorization: `Bearer ${hook.secret}`, 'webhook-id': id });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ documentId: bid, status: 'completed', output: 'v1=8#q' });
  });

  it('CRUD: list, get, rotate the secret (the old one stops working), disable, delete; only writers of the block see triggers', async () => {
    const hook = await trigger({ name: 'crud', mapping: { n: 'body.n' } });
    const list = await t.request('GET', `/block/${bid}/webhooks`, { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body.items.map((h: Json) => h.id)).toContain(hook.id);
    expect(list.body.items.every((h: Json) => h.secret === undefined)).toBe(true);
    expect((await t.request('GET', `/block/${bid}/webhooks/${hook.id}`, { token: owner.token })).body).toMatchObject({ id: hook.id, name: 'crud' });
    expect((await t.request('GET', `/block/${bid}/webhooks`, { token: outsider.token })).status).toBe(404);
    expect((await t.request('POST', `/block/${bid}/webhooks`, { token: outsider.token, body: {} })).status).toBe(404);
    const badMapping = await t.request('POST', `/block/${bid}/webhooks`, { token: owner.token, body: { mapping: { n: 'cookies.x' } } });
    expect(badMapping.status).toBe(422);
    expect(badMapping.body.error).toBe('invalid_webhook_mapping');

    const rotated = await t.request('PATCH', `/block/${bid}/webhooks/${hook.id}`, { token: owner.token, body: { rotateSecret: true } });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    const payload = '{"n":3}';
    expect((await deliver(hook.path, payload, signed(hook.secret, payload))).body.error).toBe('webhook_signature_invalid');
    expect((await deliver(hook.path, payload, signed(rotated.body.secret, payload))).status).toBe(202);

    expect((await t.request('PATCH', `/block/${bid}/webhooks/${hook.id}`, { token: owner.token, body: { enabled: false } })).body.enabled).toBe(false);
    expect((await deliver(hook.path, payload, signed(rotated.body.secret, payload))).status).toBe(404);
    expect((await t.request('DELETE', `/block/${bid}/webhooks/${hook.id}`, { token: owner.token })).status).toBe(204);
    expect((await t.request('GET', `/block/${bid}/webhooks/${hook.id}`, { token: owner.token })).status).toBe(404);
  });
});
