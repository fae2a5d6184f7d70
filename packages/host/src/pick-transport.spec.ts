import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { coreModules, createKernel, type Kernel } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { pickTransport } from './pick-transport.js';
import { loadUwsTransport, type UwsLoadResult } from './uws-loader.js';

function kernelWithLogs(transport: 'uws' | 'node'): { kernel: Kernel; logs: Array<{ level: number; msg: string; reason?: string }> } {
  const logs: Array<{ level: number; msg: string; reason?: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const kernel = createKernel({
    database: sqliteDatabase({ path: ':memory:' }),
    modules: coreModules,
    // Every production secret set, so the only warnings are the transport's.
    config: { server: { transport }, auth: { jwtSecret: 'x'.repeat(32) }, ai: { encryption: { key: Buffer.alloc(32, 7).toString('base64') } } },
    logger: pino({ level: 'warn' }, sink),
  });
  return { kernel, logs };
}

const failing = async (): Promise<UwsLoadResult> => ({ ok: false, reason: 'no native uWebSockets.js binary for linux-x64 Node ABI 999' });

describe('pickTransport', () => {
  it('falls back to node:http with exactly one warning when uWebSockets.js cannot load', async () => {
    const { kernel, logs } = kernelWithLogs('uws');
    const transport = await pickTransport(kernel, failing);
    expect(transport.name).toBe('node');
    const warnings = logs.filter((entry) => entry.level === 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toMatch(/falling back to the node:http transport/);
    expect(warnings[0]!.reason).toMatch(/Node ABI 999/);
    // The fallback transport really serves.
    const port = await transport.listen('127.0.0.1', 0);
    try {
      const live = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: 'ok' });
      // The kernel was never started: not ready.
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
    } finally {
      await transport.stopAccepting();
      await transport.close();
    }
  });

  it('uses uWebSockets.js when it loads, without a warning', async () => {
    const { kernel, logs } = kernelWithLogs('uws');
    const transport = await pickTransport(kernel);
    expect(transport.name).toBe('uws');
    expect(logs).toHaveLength(0);
  });

  it('does not try to load uWebSockets.js when the node transport is configured', async () => {
    const { kernel, logs } = kernelWithLogs('node');
    let tried = false;
    const transport = await pickTransport(kernel, async () => {
      tried = true;
      return failing();
    });
    expect(transport.name).toBe('node');
    expect(tried).toBe(false);
    expect(logs).toHaveLength(0);
  });

  it('loads the native binary on this machine', async () => {
    const result = await loadUwsTransport();
    expect(result.ok).toBe(true);
  });
});
