import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testDatabases } from '@trellis/test-support';
import { cliBin, cliDatabase, cliEnv, getJson, postJson, requireBuiltCli, runCli, startCli, tempDir, type RunningCli } from './support/cli.js';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 120_000 });

const redisUrl = process.env.TRELLIS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Worker {
  child: ChildProcess;
  line: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `trellis worker <args>` until it prints that it executes runs. */
function startWorker(args: string[], cwd: string): Promise<Worker> {
  requireBuiltCli();
  const child = spawn(process.execPath, [cliBin, 'worker', ...args], { cwd, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start\n${stdout}\n${stderr}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^(Trellis worker is executing runs.*)$/m.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      resolve({ child, line: match[1]!, output: () => stdout + stderr, exited });
    });
    void exited.then((r) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${r.code ?? r.signal}) before starting\n${stdout}\n${stderr}`));
    });
  });
}

/** Reads a run's NDJSON stream to its end. */
async function readRun(url: string, token: string): Promise<Array<{ seq: number; type: string; [k: string]: any }>> {
  const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ format: 'ndjson' }) });
  if (response.status !== 200) throw new Error(`run answered ${response.status}: ${await response.text()}`);
  const text = await response.text();
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

const longCode = "const end = Date.now() + 4000; let n = 0;\nwhile (Date.now() < end) { n++; if (n % 500000 === 0) emit('.'); }\nreturn 'worked';";

// One host process accepts and streams; two `trellis worker` processes execute, through real Redis
// (BullMQ queue and PubSub). One worker is killed with SIGKILL in the middle of a run.
describe.each(testDatabases())('trellis worker with BullMQ on $name', (db) => {
  let dir: { path: string; remove(): Promise<void> };
  let database: { url: string; drop(): Promise<void> };
  let host: RunningCli | undefined;
  const workers: Worker[] = [];
  beforeAll(async () => {
    dir = await tempDir('trellis-worker-');
    database = await cliDatabase(db, dir.path);
    const config = {
      auth: { jwtSecret: 'worker-test-secret-worker-test-secret-00' },
      adapters: {
        redisUrl,
        redisPrefix: `trellis-test:${process.pid}:${randomUUID()}:`,
        queue: 'bullmq',
        bullmq: { concurrency: 1, lockDurationMs: 2_000, stalledIntervalMs: 1_000, maxStalledCount: 1, closeGraceMs: 1_000 },
      },
      runs: { execute: false, staleAfterSeconds: 600 },
    };
    await writeFile(join(dir.path, 'trellis.config.json'), JSON.stringify(config));
    host = await startCli(['--port', '0', '--database', database.url, '--transport', 'node'], { cwd: dir.path });
    // The two workers boot side by side (neither migrates: the host did).
    const started = await Promise.allSettled([0, 1].map(() => startWorker(['--database', database.url], dir.path)));
    for (const result of started) if (result.status === 'fulfilled') workers.push(result.value);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
  });
  afterAll(async () => {
    for (const worker of workers) if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.exited));
    await host?.stop();
    await database?.drop();
    await dir?.remove();
  });

  it('refuses to start without the BullMQ queue', async () => {
    const other = await tempDir('trellis-worker-plain-');
    try {
      const result = await runCli(['worker', '--database', `sqlite:${join(other.path, 'x.db')}`], { cwd: other.path });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/adapters\.queue "bullmq"/);
    } finally {
      await other.remove();
    }
  });

  it('workers execute the runs a host accepted; a worker killed mid-run leaves no stream hanging', async () => {
    const url = host!.url;
    const user = await postJson(`${url}/auth/register`, { email: `w${Date.now()}@example.com`, password: 'correct horse battery' });
    const token = user.body.token as string;
    const project = await postJson(`${url}/project`, { name: `workers ${Date.now()}`, tools: [], access: 'team' }, token);
    const content = {
      type: 'doc',
      content: [
        { type: 'codeBlock', attrs: { id: 'first', language: 'javascript' }, content: [{ type: 'text', text: "return 'quick';" }] },
        { type: 'codeBlock', attrs: { id: 'long', language: 'javascript' }, content: [{ type: 'text', text: longCode }] },
        { type: 'outputBlock', attrs: { id: 'out' }, content: [{ type: 'text', text: '{{ first }} then {{ long }}' }] },
      ],
    };
    const doc = await postJson(`${url}/documents`, { projectId: project.body.id, title: 'work', content }, token);
    expect(doc.status).toBe(201);

    // Two runs at once: with one run per worker, each worker takes one.
    const streams = [readRun(`${url}/documents/${doc.body.id}/run`, token), readRun(`${url}/documents/${doc.body.id}/run`, token)];
    for (;;) {
      const list = await getJson(`${url}/documents/${doc.body.id}/runs`, token);
      const items = list.body.items ?? [];
      if (items.length === 2 && items.every((r: any) => r.status === 'running' && r.sessions[0].status === 'completed')) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    workers[0]!.child.kill('SIGKILL');
    expect((await workers[0]!.exited).signal).toBe('SIGKILL');

    const results = await Promise.all(streams);
    for (const events of results) {
      const last = events.at(-1)!;
      expect(last.type).toBe('run_complete');
      const seqs = events.map((e) => e.seq);
      expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(seqs.length);
    }
    const list = await getJson(`${url}/documents/${doc.body.id}/runs`, token);
    const runs = list.body.items as Array<{ status: string; attempts: number; output: unknown; error: { code: string } | null }>;
    // The run of the killed worker was retried from its last completed block, or failed with worker_lost.
    const retried = runs.filter((r) => r.attempts > 1);
    expect(retried.length).toBeGreaterThanOrEqual(1);
    for (const run of runs) {
      if (run.status === 'completed') expect(run.output).toBe('quick then worked');
      else expect(run).toMatchObject({ status: 'failed', error: { code: 'worker_lost' } });
    }
    const resumedStream = results.find((events) => events.filter((e) => e.type === 'block_start' && e.blockId === 'long').length === 2);
    if (resumedStream) {
      // The retry started again at the long block, not at the first one.
      expect(resumedStream.filter((e) => e.type === 'block_start' && e.blockId === 'first')).toHaveLength(1);
    }
  });
});
