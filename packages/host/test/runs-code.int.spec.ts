import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, eventually, type Actor } from './documents.fixtures.js';
import { expectDense, wf, workflowDocument } from './runs.fixtures.js';
import { readNdjson, readSse, type ReadEvent } from './support/run-clients.js';

const errorOf = (events: ReadEvent[]) => events.find((e) => e.type === 'block_error')?.data;

// Code blocks run in the CodeSandbox port (QuickJS in WebAssembly) with the runs module's limits.
describe.each(testDatabases())('code blocks on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    beforeAll(async () => {
      t = await startTestHost(db, transport, { config: { runs: { codeTimeoutMs: 1_500, codeMemoryBytes: 16 * 1024 * 1024 } } as never });
      owner = await actor(t);
    });
    afterAll(() => t?.close());

    const run = async (content: unknown, body: Record<string, unknown> = {}) => {
      const { documentId } = await workflowDocument(t, owner.token, content);
      return { documentId, ...(await readNdjson(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { format: 'ndjson', ...body } })) };
    };

    it('reads inputs and earlier outputs, streams emit() as block_chunk, captures console, returns its value', async () => {
      const code = "console.log('starting', inputs.n);\nfor (let i = 0; i < inputs.n; i++) emit('c' + i + ' ');\nreturn { total: inputs.n * 2, note: blocks.note, python: blocks.py };";
      const content = wf.doc(
        wf.paragraph('note', 'a note'),
        { type: 'codeBlock', attrs: { id: 'py', language: 'python' }, content: [{ type: 'text', text: 'print(1)' }] },
        wf.input('n', { type: 'integer' }),
        wf.code('calc', code),
        wf.output('out', '{{ calc.total }}'),
      );
      const { events, documentId } = await run(content, { inputs: { n: 5 } });
      expectDense(events.map((e) => e.seq));
      expect(events.filter((e) => e.type === 'block_chunk').map((e) => e.data.delta).join('')).toBe('c0 c1 c2 c3 c4 ');
      const done = events.find((e) => e.type === 'block_complete' && e.data.blockId === 'code-calc')!;
      expect(done.data.output).toEqual({ total: 10, note: 'a note', python: 'print(1)' });
      const complete = events.at(-1)!.data;
      expect(complete.sessions.map((s: { blockId: string }) => s.blockId)).toEqual(['in-n', 'code-calc', 'out-out']);
      const runId = events[0]!.data.runId;
      const record = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed');
      expect(record.body.output).toBe(10);
      expect(record.body.sessions[1].console).toEqual([{ level: 'log', text: 'starting 5' }]);
      expect(record.body.usage.sandboxMs).toBeGreaterThanOrEqual(0);
    });

    it('cannot read files: no require, no import, no process', async () => {
      for (const code of ["return require('fs').readFileSync('/etc/passwd', 'utf8')", "return process.env", "return import('fs')"]) {
        const { events } = await run(wf.doc(wf.code('bad', code)));
        expect(events.at(-2)).toMatchObject({ type: 'run_error' });
        expect(errorOf(events)?.code).toBe('sandbox_error');
      }
    });

    it('cannot reach the network: no fetch, no XMLHttpRequest, no sockets', async () => {
      for (const code of ["return fetch('http://127.0.0.1/')", 'return new XMLHttpRequest()', "return typeof WebSocket === 'undefined' ? missing() : 1"]) {
        const { events } = await run(wf.doc(wf.code('net', code)));
        expect(errorOf(events)?.code).toBe('sandbox_error');
      }
    });

    it('cannot exceed its memory limit', async () => {
      // Typed arrays cost almost no CPU per byte: the limit is reached long before the 1.5 s time
      // limit even on a loaded machine (a string built by repeat() took over 1.5 s at load 25).
      const { events } = await run(wf.doc(wf.code('hog', 'const parts = []; for (;;) parts.push(new Float64Array(1 << 19));')));
      expect(errorOf(events)?.code).toBe('sandbox_memory_exceeded');
    });

    it('cannot run past its time limit; the run\'s own timeout stops it too', async () => {
      const slow = await run(wf.doc(wf.code('spin', 'for (;;) {}')));
      expect(errorOf(slow.events)?.code).toBe('sandbox_timeout');
      const { documentId } = await workflowDocument(t, owner.token, wf.doc(wf.code('spin', 'for (;;) {}')));
      const sse = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { timeout: 1 } });
      expect(sse.events.map((e) => e.type)).toEqual(['run_start', 'block_start', 'block_error', 'block_end', 'run_error', 'run_complete']);
      expect(errorOf(sse.events)?.code).toBe('run_timeout');
      expect(sse.events.at(-1)!.data.timedOut).toBe(true);
    });
  });
});
