import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiGatewayServiceIdentifier, provide } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { expectDense, wf } from './runs.fixtures.js';
import { readNdjson, runEventTypes, ScriptedGateway, type ReadEvent } from './support/run-clients.js';

/**
 * The Block API's run endpoints wired to the run engine: POST /block/:pageId/run, POST
 * /block/test and POST /block/:bid/api, each streamed (SSE through the `eventsource` client,
 * NDJSON through a line reader) and with `stream: false`; versions, deployment access, the
 * project's run list, errors. Every JSON answer is checked against /openapi.json.
 */

type Json = Record<string, any>;

/** Reads a run's SSE stream with the `eventsource` client; a POST with optional credentials and headers. */
function sse(url: string, options: { token?: string; headers?: Record<string, string>; body: unknown; stopAfter?: number }): Promise<{ events: ReadEvent[]; status: number; contentType: string | null }> {
  return new Promise((resolve, reject) => {
    const events: ReadEvent[] = [];
    let status = 0;
    let contentType: string | null = null;
    const source = new EventSource(url, {
      fetch: async (input, init) => {
        const response = await fetch(input, {
          ...init,
          method: 'POST',
          body: JSON.stringify(options.body),
          headers: {
            ...(init.headers as Record<string, string>),
            'content-type': 'application/json',
            ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
            ...options.headers,
          },
        });
        status = response.status;
        contentType = response.headers.get('content-type');
        return response;
      },
    });
    const done = () => {
      source.close();
      resolve({ events, status, contentType });
    };
    for (const type of runEventTypes) {
      source.addEventListener(type, (message) => {
        events.push({ seq: Number(message.lastEventId), type, data: JSON.parse(message.data) });
        if (type === 'run_complete' || type === 'run_waiting' || (options.stopAfter !== undefined && events.length >= options.stopAfter)) done();
      });
    }
    source.onerror = (error) => {
      source.close();
      if (status && status !== 200) resolve({ events, status, contentType });
      else reject(new Error(`EventSource failed: ${String((error as { message?: string }).message ?? error)}`));
    };
  });
}

/** input → code → output: the benchmark's workflow, with a label to tell versions apart. */
const flow = (label: string) =>
  wf.doc(
    wf.input('n', { type: 'number', required: true }),
    wf.code('calc', `emit('${label}'); return { label: '${label}', twice: inputs.n * 2 };`),
    wf.output('out', '{{ calc.label }}={{ calc.twice }}'),
  );

const types = (events: ReadEvent[]) => events.map((e) => e.type);
const threeBlocks = ['run_start', 'block_start', 'block_complete', 'block_end', 'block_start', 'block_chunk', 'block_complete', 'block_end', 'block_start', 'block_complete', 'block_end', 'run_complete'];

let counter = 0;

describe.each(testDatabases())('block run endpoints on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let host: TestHost;
    let t: TestHost;
    let owner: Actor;
    let member: Actor;
    let outsider: Actor;
    let teamId: string;
    let projectId: string;

    beforeAll(async () => {
      host = await startTestHost(db, transport, { adapters: [provide(aiGatewayServiceIdentifier, new ScriptedGateway())] });
      t = host;
      owner = await actor(t);
      member = await actor(t);
      outsider = await actor(t);
      const team = await t.request('POST', '/teams', { token: owner.token, body: { name: `Runners ${++counter}` } });
      teamId = team.body.id;
      expect((await t.request('POST', `/teams/${teamId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } })).status).toBe(201);
      projectId = (await createProject(t, owner.token, { access: 'private', teamId })).id;
    });
    afterAll(() => host?.close());

    async function block(content: unknown, project = projectId): Promise<string> {
      const r = await t.request('POST', `/block/${project}`, { token: owner.token, body: { name: `Flow ${++counter}`, type: 'workflow', content } });
      expect(r.status, r.text).toBe(201);
      return r.body.id;
    }

    async function deploy(bid: string, access: string): Promise<Json> {
      const r = await t.request('POST', `/block/${bid}/deploy`, { token: owner.token, body: { access } });
      expect(r.status, r.text).toBe(201);
      return r.body;
    }

    async function runsOf(project: string): Promise<Json[]> {
      const r = await t.request('GET', `/project/${project}/runs?size=100`, { token: owner.token });
      expect(r.status).toBe(200);
      return r.body.items;
    }

    it('POST /block/:pageId/run: SSE, NDJSON and stream false run the current page; each run is listed for the project as source block', async () => {
      const bid = await block(flow('draft1'));
      const streamed = await sse(`${t.url}/block/${bid}/run`, { token: owner.token, body: { inputs: { n: 2 } } });
      expect(streamed.status).toBe(200);
      expect(streamed.contentType).toMatch(/^text\/event-stream/);
      expectDense(streamed.events.map((e) => e.seq));
      expect(types(streamed.events)).toEqual(threeBlocks);
      expect(streamed.events[0]!.data).toMatchObject({ documentId: bid });
      expect(streamed.events.find((e) => e.type === 'block_chunk')!.data).toMatchObject({ delta: 'draft1' });
      expect(streamed.events.at(-1)!.data.sessions.map((s: Json) => s.status)).toEqual(['completed', 'completed', 'completed']);

      // The page's current content, not a snapshot: an edit changes the next run.
      expect((await t.request('PUT', `/block/${bid}`, { token: owner.token, body: { content: flow('draft2') } })).status).toBe(200);
      const lines = await readNdjson(`${t.url}/block/${bid}/run`, { token: owner.token, body: { format: 'ndjson', inputs: { n: 5 } } });
      expect(lines.contentType).toMatch(/^application\/x-ndjson/);
      expectDense(lines.events.map((e) => e.seq));
      expect(types(lines.events)).toEqual(threeBlocks);
      expect(lines.events.at(-1)!.data.globalCtx.find((c: Json) => c.name === 'out').value).toBe('draft2=10');

      const quiet = await t.request('POST', `/block/${bid}/run`, { token: owner.token, body: { stream: false, inputs: { n: 21 } } });
      expect(quiet.status).toBe(200);
      expect(quiet.body).toMatchObject({ documentId: bid, status: 'completed', output: 'draft2=42', timedOut: false, error: null });
      expect(quiet.body.sessions).toHaveLength(3);

      const listed = await runsOf(projectId);
      const mine = listed.filter((r) => r.documentId === bid);
      expect(mine).toHaveLength(3);
      expect(mine.every((r) => r.source === 'block' && r.version === null && r.status === 'completed' && r.userId === owner.userId)).toBe(true);
      expect(mine.map((r) => r.output)).toEqual(['draft2=42', 'draft2=10', 'draft1=4']);
      expect(mine.find((r) => r.id === quiet.body.runId)).toMatchObject({ inputs: { n: 21 }, projectId });
      // Also a run of the page's document.
      const byDoc = await t.request('GET', `/documents/${bid}/runs/${quiet.body.runId}`, { token: owner.token });
      expect(byDoc.body).toMatchObject({ source: 'block', output: 'draft2=42' });
    });

    it('POST /block/test: SSE, NDJSON and stream false run inline content; nothing is stored; projectId\'s team pays', async () => {
      const project = (await createProject(t, owner.token, { teamId })).id;
      const streamed = await sse(`${t.url}/block/test`, { token: owner.token, body: { projectId: project, inputs: { n: 1 }, content: flow('t') } });
      expect(streamed.status).toBe(200);
      expectDense(streamed.events.map((e) => e.seq));
      expect(types(streamed.events)).toEqual(threeBlocks);
      expect(streamed.events[0]!.data.documentId).toBeNull();
      const lines = await readNdjson(`${t.url}/block/test`, { token: owner.token, body: { format: 'ndjson', projectId: project, inputs: { n: 3 }, content: flow('t') } });
      expect(types(lines.events)).toEqual(threeBlocks);
      const quiet = await t.request('POST', '/block/test', { token: owner.token, body: { stream: false, projectId: project, inputs: { n: 4 }, content: flow('t') } });
      expect(quiet.status).toBe(200);
      expect(quiet.body).toMatchObject({ documentId: null, status: 'completed', output: 't=8' });
      // Stored nowhere: not in the project's runs, not readable by id.
      expect(await runsOf(project)).toEqual([]);
      // The credits of the run were held from the project's team (and settled).
      const ledger = await t.request('GET', `/billing/credits/ledger?teamId=${teamId}&size=100`, { token: owner.token });
      expect(ledger.status).toBe(200);
      expect(JSON.stringify(ledger.body)).toContain(`run ${quiet.body.runId}`);
      // Without projectId: the caller's first team.
      const personal = await t.request('POST', '/block/test', { token: outsider.token, body: { stream: false, inputs: { n: 1 }, content: flow('p') } });
      expect(personal.body).toMatchObject({ status: 'completed', output: 'p=2' });

      // Errors: inputs, content, a project the caller may not run in, a missing project.
      const bad = await t.request('POST', '/block/test', { token: owner.token, body: { inputs: { n: 'two' }, content: flow('t') } });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: 'invalid_inputs', details: [expect.objectContaining({ field: 'inputs.n' })] });
      const missing = await t.request('POST', '/block/test', { token: owner.token, body: { inputs: {}, content: flow('t') } });
      expect(missing.status).toBe(400);
      expect(missing.body.details[0].field).toBe('inputs.n');
      const notDoc = await t.request('POST', '/block/test', { token: owner.token, body: { inputs: {}, content: { type: 'paragraph' } } });
      expect(notDoc.status).toBe(400);
      expect(notDoc.body.error).toBe('invalid_content');
      const noInputs = await t.request('POST', '/block/test', { token: owner.token, body: { content: flow('t') } });
      expect(noInputs.status).toBe(422);
      const foreign = await t.request('POST', '/block/test', { token: outsider.token, body: { projectId: project, inputs: { n: 1 }, content: flow('t') } });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error).toBe('project_not_found');
      const publicProject = (await createProject(t, owner.token, { access: 'public' })).id;
      const reader = await t.request('POST', '/block/test', { token: outsider.token, body: { projectId: publicProject, inputs: { n: 1 }, content: flow('t') } });
      expect(reader.status).toBe(403);
      expect(reader.body.error).toBe('project_access_denied');
      const tooLong = await t.request('POST', '/block/test', { token: owner.token, body: { timeout: 10_000_000, inputs: { n: 1 }, content: flow('t') } });
      expect(tooLong.status).toBe(400);
      expect(tooLong.body.error).toBe('timeout_too_large');
    });

    it('deploy → next-version → API run of a pinned version runs that version, never the draft; SSE, NDJSON, stream false; runs listed with their version', async () => {
      const bid = await block(flow('v1'));
      await deploy(bid, 'public');
      expect((await t.request('PUT', `/block/${bid}`, { token: owner.token, body: { content: flow('v2') } })).status).toBe(200);
      expect((await t.request('GET', `/block/${bid}/next-version`, { token: owner.token })).body).toMatchObject({ version: '2', latestVersion: '1' });
      await deploy(bid, 'public');
      // A newer draft, never deployed.
      expect((await t.request('PUT', `/block/${bid}`, { token: owner.token, body: { content: flow('draft') } })).status).toBe(200);
      expect((await t.request('GET', `/block/${bid}/next-version`, { token: owner.token })).body).toMatchObject({ version: '3', latestVersion: '2' });

      const projectBefore = await t.request('GET', `/project/${projectId}`, { token: owner.token });
      const versionsBefore = await t.request('GET', `/project/${projectId}/versions/${bid}`, { token: owner.token });
      const latest = await t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 1 } } });
      expect(latest.status, latest.text).toBe(200);
      expect(latest.body).toMatchObject({ status: 'completed', output: 'v2=2' });
      const pinned = await t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 3 }, version: '1' } });
      expect(pinned.body).toMatchObject({ status: 'completed', output: 'v1=6' });
      const streamed = await sse(`${t.url}/block/${bid}/api`, { body: { inputs: { n: 4 }, version: '1' } });
      expect(streamed.status).toBe(200);
      expectDense(streamed.events.map((e) => e.seq));
      expect(types(streamed.events)).toEqual(threeBlocks);
      expect(streamed.events.find((e) => e.type === 'block_chunk')!.data.delta).toBe('v1');
      const lines = await readNdjson(`${t.url}/block/${bid}/api`, { token: owner.token, body: { format: 'ndjson', inputs: { n: 5 }, version: '2' } });
      expect(lines.events.at(-1)!.data.globalCtx.find((c: Json) => c.name === 'out').value).toBe('v2=10');
      // The page run runs the draft.
      const page = await t.request('POST', `/block/${bid}/run`, { token: owner.token, body: { stream: false, inputs: { n: 1 } } });
      expect(page.body.output).toBe('draft=2');

      const mine = (await runsOf(projectId)).filter((r) => r.documentId === bid);
      expect(mine.map((r) => [r.source, r.version, r.output])).toEqual([
        ['block', null, 'draft=2'],
        ['api', '2', 'v2=10'],
        ['api', '1', 'v1=8'],
        ['api', '1', 'v1=6'],
        ['api', '2', 'v2=2'],
      ]);
      // An anonymous caller of a public deployment runs as the project owner; the block's team pays.
      expect(mine.find((r) => r.id === latest.body.runId)).toMatchObject({ userId: owner.userId, projectId });
      const ledger = await t.request('GET', `/billing/credits/ledger?teamId=${teamId}&size=100`, { token: owner.token });
      expect(JSON.stringify(ledger.body)).toContain(`run ${latest.body.runId}`);

      // Running writes nothing back to what it read: the project and the versions are unchanged.
      expect((await t.request('GET', `/project/${projectId}`, { token: owner.token })).body.updatedAt).toBe(projectBefore.body.updatedAt);
      expect((await t.request('GET', `/project/${projectId}/versions/${bid}`, { token: owner.token })).body).toEqual(versionsBefore.body);

      const unknown = await t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 1 }, version: '9' } });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toBe('block_version_not_found');
    });

    it('runId attaches to an earlier API run of the deployment: its result, its whole log, or the events after Last-Event-ID', async () => {
      const bid = await block(flow('a'));
      await deploy(bid, 'public');
      const first = await t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 2 } } });
      const runId = first.body.runId as string;
      const again = await t.request('POST', `/block/${bid}/api`, { body: { stream: false, runId } });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      const log = await sse(`${t.url}/block/${bid}/api`, { body: { runId } });
      expect(types(log.events)).toEqual(threeBlocks);
      const tail = await readNdjson(`${t.url}/block/${bid}/api`, { token: owner.token, headers: { 'last-event-id': '8' }, body: { format: 'ndjson', runId } });
      expect(tail.events.map((e) => e.seq)).toEqual([9, 10, 11, 12]);
      // No new run was started by attaching.
      expect((await runsOf(projectId)).filter((r) => r.documentId === bid)).toHaveLength(1);

      // Only API runs of this deployment: not a page run of the block, not another block's run.
      const pageRun = await t.request('POST', `/block/${bid}/run`, { token: owner.token, body: { stream: false, inputs: { n: 1 } } });
      const other = await block(flow('b'));
      await deploy(other, 'public');
      for (const [target, id] of [[bid, pageRun.body.runId], [other, runId], [bid, '00000000-0000-7000-8000-000000000000']]) {
        const r = await t.request('POST', `/block/${target}/api`, { body: { stream: false, runId: id } });
        expect(r.status).toBe(404);
        expect(r.body.error).toBe('run_not_found');
      }
    });

    describe('deployment access on /block/:bid/api', () => {
      const call = (bid: string, who: { token?: string; deploymentToken?: string } = {}) =>
        t.request('POST', `/block/${bid}/api`, {
          ...(who.token ? { token: who.token } : {}),
          ...(who.deploymentToken ? { headers: { 'x-deployment-token': who.deploymentToken } } : {}),
          body: { stream: false, inputs: { n: 1 } },
        });

      it('private: the execute permission only', async () => {
        const bid = await block(flow('private'));
        await deploy(bid, 'private');
        expect((await call(bid, { token: owner.token })).body).toMatchObject({ status: 'completed', output: 'private=2' });
        const anonymous = await call(bid);
        expect([anonymous.status, anonymous.body.error]).toEqual([401, 'authentication_required']);
        const stranger = await call(bid, { token: outsider.token });
        expect([stranger.status, stranger.body.error]).toEqual([404, 'block_not_found']);
        // The project is private: its team's members have no permission in it.
        const teammate = await call(bid, { token: member.token });
        expect(teammate.status).toBe(404);
      });

      it('team: the owner and the members of the project\'s team', async () => {
        const bid = await block(flow('team'));
        await deploy(bid, 'team');
        const teammate = await call(bid, { token: member.token });
        expect(teammate.status, teammate.text).toBe(200);
        expect(teammate.body.output).toBe('team=2');
        // A signed-in caller runs as themself.
        const run = (await runsOf(projectId)).find((r) => r.id === teammate.body.runId);
        expect(run).toMatchObject({ userId: member.userId, source: 'api', version: '1' });
        expect((await call(bid)).status).toBe(401);
        const stranger = await call(bid, { token: outsider.token });
        expect([stranger.status, stranger.body.error]).toEqual([404, 'block_not_found']);
      });

      it('public: anyone, with or without a credential', async () => {
        const bid = await block(flow('public'));
        await deploy(bid, 'public');
        for (const who of [{}, { token: outsider.token }, { token: member.token }, { token: owner.token }]) {
          const r = await call(bid, who);
          expect(r.status, r.text).toBe(200);
          expect(r.body.output).toBe('public=2');
        }
      });

      it('token: the X-Deployment-Token (anonymous or not) or the execute permission; rotation revokes the old token', async () => {
        const bid = await block(flow('token'));
        const deployed = await deploy(bid, 'token');
        const token = deployed.deploymentToken as string;
        expect(token).toMatch(/^trd_/);
        expect((await call(bid, { deploymentToken: token })).body.output).toBe('token=2');
        expect((await call(bid, { token: outsider.token, deploymentToken: token })).status).toBe(200);
        expect((await call(bid, { token: owner.token })).status).toBe(200);
        const none = await call(bid);
        expect([none.status, none.body.error]).toEqual([401, 'authentication_required']);
        const wrong = await call(bid, { deploymentToken: 'trd_wrong' });
        expect(wrong.status).toBe(401);
        // An outsider without the token learns nothing: the 404 of private and team deployments.
        const stranger = await call(bid, { token: outsider.token });
        expect([stranger.status, stranger.body.error]).toEqual([404, 'block_not_found']);
        // Streams take the token too.
        const streamed = await sse(`${t.url}/block/${bid}/api`, { headers: { 'x-deployment-token': token }, body: { inputs: { n: 3 } } });
        expect(streamed.events.at(-1)!.type).toBe('run_complete');

        const rotated = await t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { access: 'token', rotateToken: true } });
        expect(rotated.status).toBe(200);
        expect((await call(bid, { deploymentToken: token })).status).toBe(401);
        expect((await call(bid, { deploymentToken: rotated.body.deploymentToken })).status).toBe(200);
        // Access can change without a new version: public now.
        await t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { access: 'private' } });
        expect((await call(bid, { deploymentToken: rotated.body.deploymentToken })).status).toBe(401);
      });

      it('a block never deployed, a trashed block, a missing block', async () => {
        const bid = await block(flow('x'));
        const never = await call(bid, { token: owner.token });
        expect([never.status, never.body.error]).toEqual([404, 'deployment_not_found']);
        await deploy(bid, 'public');
        expect((await t.request('DELETE', `/block/${projectId}/${bid}`, { token: owner.token })).status).toBe(200);
        const trashed = await call(bid);
        expect([trashed.status, trashed.body.error]).toEqual([404, 'block_not_found']);
        const missing = await call('00000000-0000-7000-8000-000000000000', { token: owner.token });
        expect([missing.status, missing.body.error]).toEqual([404, 'block_not_found']);
      });
    });

    it('errors: 400 invalid_inputs with details (input blocks and deployment input definitions), 402, 403, 404, 422', async () => {
      const bid = await block(flow('e'));
      const bad = await t.request('POST', `/block/${bid}/run`, { token: owner.token, body: { inputs: { n: 'three' } } });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ error: 'invalid_inputs', message: expect.any(String), details: [expect.objectContaining({ field: 'inputs.n' })] });
      expect((await t.request('POST', `/block/${bid}/run`, { token: owner.token, body: {} })).status).toBe(422);

      // The deployment's input definitions decide what /api accepts.
      const set = await t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { access: 'public', inputs: [{ name: 'n', type: 'number', required: true }, { name: 'tag', type: 'string', required: true }] } });
      expect(set.status).toBe(200);
      const api = await t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 1 } } });
      expect(api.status).toBe(400);
      expect(api.body.error).toBe('invalid_inputs');
      expect(api.body.details.map((d: Json) => d.field)).toEqual(['inputs.tag']);
      expect((await t.request('POST', `/block/${bid}/api`, { body: { stream: false, inputs: { n: 1, tag: 'ok' } } })).body.output).toBe('e=2');

      // 402: a team too poor for 25 model turns.
      const poor = await actor(t);
      const poorProject = (await createProject(t, poor.token)).id;
      const expensive = wf.doc(...Array.from({ length: 25 }, (_, i) => wf.llm(`l${i}`, 'echo', 'hi')));
      const r = await t.request('POST', `/block/${poorProject}`, { token: poor.token, body: { name: 'Expensive', type: 'workflow', content: expensive } });
      const costly = r.body.id as string;
      const page = await t.request('POST', `/block/${costly}/run`, { token: poor.token, body: { inputs: {} } });
      expect(page.status).toBe(402);
      expect(page.body).toMatchObject({ error: 'insufficient_credits', balance: 100, required: 126, shortfall: 26 });
      expect((await t.request('POST', `/block/${costly}/deploy`, { token: poor.token, body: { access: 'public' } })).status).toBe(201);
      const paid = await t.request('POST', `/block/${costly}/api`, { token: outsider.token, body: { stream: false, inputs: {} } });
      expect(paid.status).toBe(402);
      expect(paid.body.error).toBe('insufficient_credits');
      const test = await t.request('POST', '/block/test', { token: poor.token, body: { projectId: poorProject, inputs: {}, content: expensive } });
      expect(test.status).toBe(402);
      expect((await t.request('GET', `/project/${poorProject}/runs`, { token: poor.token })).body.total).toBe(0);

      // 403: read without execute; 404: hidden or missing.
      const publicProject = (await createProject(t, owner.token, { access: 'public' })).id;
      const visible = await block(flow('v'), publicProject);
      const reader = await t.request('POST', `/block/${visible}/run`, { token: outsider.token, body: { inputs: { n: 1 } } });
      expect([reader.status, reader.body.error]).toEqual([403, 'block_access_denied']);
      const hidden = await t.request('POST', `/block/${bid}/run`, { token: outsider.token, body: { inputs: { n: 1 } } });
      expect([hidden.status, hidden.body.error]).toEqual([404, 'block_not_found']);
      const missing = await t.request('POST', '/block/00000000-0000-7000-8000-000000000000/run', { token: owner.token, body: { inputs: {} } });
      expect([missing.status, missing.body.error]).toEqual([404, 'block_not_found']);
      const anonymous = await t.request('POST', `/block/${bid}/run`, { body: { inputs: { n: 1 } } });
      expect(anonymous.status).toBe(401);
    });

    it('GET /project/:projectId/runs pages the project\'s runs, newest first, and needs read access', async () => {
      const project = (await createProject(t, owner.token, { teamId })).id;
      const bid = await block(flow('p'), project);
      await deploy(bid, 'team');
      for (let n = 1; n <= 3; n++) await t.request('POST', `/block/${bid}/run`, { token: owner.token, body: { stream: false, inputs: { n } } });
      await t.request('POST', `/block/${bid}/api`, { token: member.token, body: { stream: false, inputs: { n: 9 } } });
      const first = await t.request('GET', `/project/${project}/runs?page=1&size=2`, { token: owner.token });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ total: 4, page: 1, size: 2 });
      expect(first.body.items.map((r: Json) => [r.source, r.output])).toEqual([['api', 'p=18'], ['block', 'p=6']]);
      const second = await t.request('GET', `/project/${project}/runs?page=2&size=2`, { token: owner.token });
      expect(second.body.items.map((r: Json) => r.output)).toEqual(['p=4', 'p=2']);
      expect(first.body.items[0]).toMatchObject({ id: expect.any(String), createdAt: expect.any(String), updatedAt: expect.any(String), status: 'completed' });
      const stranger = await t.request('GET', `/project/${project}/runs`, { token: outsider.token });
      expect(stranger.status).toBe(404);
    });
  });
});
