import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessRunQueue, provide, runQueueServiceIdentifier, type RunJob, type RunJobHandler, type RunQueue } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { actor, eventually, type Actor } from './documents.fixtures.js';
import { wf, workflowDocument } from './runs.fixtures.js';
import { readSse } from './support/run-clients.js';

/**
 * The in-process queue, except that `enqueue` answers only once the job's run has left `queued`
 * (a continuation that starts before the resume's answer is written, as happens under load).
 */
class EagerQueue implements RunQueue {
  private readonly inner = new InProcessRunQueue({ concurrency: 4 });
  /** Set once the test can read a run's status: from then on `enqueue` waits for it. */
  statusOf: ((runId: string) => Promise<string>) | null = null;

  async enqueue(job: RunJob): Promise<void> {
    await this.inner.enqueue(job);
    const statusOf = this.statusOf;
    if (statusOf) await eventually(() => statusOf(job.runId), (status) => status !== 'queued');
  }

  process(handler: RunJobHandler): Promise<void> {
    return this.inner.process(handler);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

describe.each(testDatabases())('resume on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  const queue = new EagerQueue();

  beforeAll(async () => {
    t = await startTestHost(db, 'node', { adapters: [provide(runQueueServiceIdentifier, queue)] });
    owner = await actor(t);
  });
  afterAll(() => t?.close());

  it('answers the status it left the run in (queued), not what the continuation made of it since', async () => {
    const content = wf.doc(wf.input('name'), wf.ask('colour', 'Which colour for {{ name }}?'), wf.output('out', '{{ name }} likes {{ colour }}'));
    const { documentId } = await workflowDocument(t, owner.token, content);
    const paused = await readSse(`${t.url}/documents/${documentId}/run`, { token: owner.token, body: { inputs: { name: 'Ada' } } });
    const runId = paused.events.at(-1)!.data.runId as string;
    queue.statusOf = async (id) => (await t.request('GET', `/documents/${documentId}/runs/${id}`, { token: owner.token })).body.status;
    const resumed = await t.request('POST', `/documents/${documentId}/runs/${runId}/resume`, { token: owner.token, body: { answer: 'green' } });
    expect(resumed.status).toBe(202);
    expect(resumed.body).toEqual({ success: true, runId, status: 'queued' });
    const final = await eventually(() => t.request('GET', `/documents/${documentId}/runs/${runId}`, { token: owner.token }), (r) => r.body.status === 'completed');
    expect(final.body.output).toBe('Ada likes green');
  });
});
