import { describe, expect, it } from 'vitest';
import { Counter, Histogram } from 'prom-client';
import { InProcessPubSub } from '../../ports/pubsub.js';
import { collabTopic } from '../../modules/collab/index.js';
import { pushTopic } from '../../modules/realtime/index.js';
import { countingPubSub } from './counting-pubsub.js';
import { observeJobRun } from './jobs.js';
import { sqlOperation, TrellisMetrics } from './metrics.js';

const value = async (metrics: TrellisMetrics, name: string, labels: Record<string, string> = {}) => {
  const metric = (await metrics.registry.getSingleMetric(name)?.get())!;
  return metric.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l) && !('metricName' in v && String(v.metricName).endsWith('_bucket')))?.value ?? 0;
};

describe('TrellisMetrics', () => {
  it('keeps a registry per instance: two kernels never share counters', async () => {
    const a = new TrellisMetrics({ defaultMetrics: false });
    const b = new TrellisMetrics({ defaultMetrics: false });
    a.httpRequests.inc({ method: 'GET', route: '/x', status: '200' });
    expect(await value(a, 'trellis_http_requests_total', { route: '/x' })).toBe(1);
    expect(await value(b, 'trellis_http_requests_total', { route: '/x' })).toBe(0);
  });

  it('returns the metric registered first for the same name, and refuses another type', () => {
    const metrics = new TrellisMetrics({ defaultMetrics: false });
    const first = metrics.counter({ name: 'trellis_runs_total', help: 'Runs.', labelNames: ['outcome'] });
    expect(first).toBeInstanceOf(Counter);
    expect(metrics.counter({ name: 'trellis_runs_total', help: 'Runs.', labelNames: ['outcome'] })).toBe(first);
    expect(() => metrics.gauge({ name: 'trellis_runs_total', help: 'Runs.' })).toThrow(/another type/);
    expect(metrics.histogram({ name: 'trellis_run_seconds', help: 'Run time.' })).toBeInstanceOf(Histogram);
  });

  it('renders the Prometheus text of registered metrics', async () => {
    const metrics = new TrellisMetrics({ defaultMetrics: false });
    metrics.counter({ name: 'trellis_ai_tokens_total', help: 'AI tokens.', labelNames: ['provider'] }).inc({ provider: 'openai' }, 12);
    const text = await metrics.render();
    expect(text).toContain('# TYPE trellis_ai_tokens_total counter');
    expect(text).toContain('trellis_ai_tokens_total{provider="openai"} 12');
  });

  it('names SQL operations with a bounded set of labels', () => {
    expect(sqlOperation('select 1')).toBe('select');
    expect(sqlOperation('  INSERT INTO "user" ...')).toBe('insert');
    expect(sqlOperation('with x as (select 1) select * from x')).toBe('select');
    expect(sqlOperation('/* hint */ update t set a = 1')).toBe('update');
    expect(sqlOperation('pragma foreign_keys = on')).toBe('other');
  });
});

describe('countingPubSub', () => {
  it('counts pushes by target kind and collaboration messages on the topics the modules use, and still delivers', async () => {
    const metrics = new TrellisMetrics({ defaultMetrics: false });
    const pubsub = countingPubSub(new InProcessPubSub(), metrics);
    expect(pubsub).toBeInstanceOf(InProcessPubSub);
    const received: Array<string | Uint8Array> = [];
    await pubsub.subscribe(pushTopic('user', 'u1'), (m) => received.push(m));
    await pubsub.publish(pushTopic('user', 'u1'), 'hello');
    await pubsub.publish(pushTopic('application', 'a1'), 'x');
    await pubsub.publish(pushTopic('hardware', 'h1'), 'x');
    await pubsub.publish(collabTopic('doc1'), new Uint8Array([1]));
    await pubsub.publish('someone-else:topic', 'x');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(received).toEqual(['hello']);
    expect(await value(metrics, 'trellis_realtime_pushes_total', { kind: 'user' })).toBe(1);
    expect(await value(metrics, 'trellis_realtime_pushes_total', { kind: 'application' })).toBe(1);
    expect(await value(metrics, 'trellis_realtime_pushes_total', { kind: 'hardware' })).toBe(1);
    expect(await value(metrics, 'trellis_collab_messages_total')).toBe(1);
  });
});

describe('observeJobRun', () => {
  it('counts runs by outcome and rethrows a failure', async () => {
    const metrics = new TrellisMetrics({ defaultMetrics: false });
    await observeJobRun(metrics, 'sweep', async () => undefined);
    await expect(observeJobRun(metrics, 'sweep', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await value(metrics, 'trellis_job_runs_total', { job: 'sweep', outcome: 'ok' })).toBe(1);
    expect(await value(metrics, 'trellis_job_runs_total', { job: 'sweep', outcome: 'failed' })).toBe(1);
  });
});
