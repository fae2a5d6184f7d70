import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { coreModules, createKernel, defineModule } from '@trellis/core';

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(JSON.parse(String(chunk)));
      callback();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

describe('createKernel', () => {
  it('warns loudly when the JWT secret is a generated development default', () => {
    const { logger, lines } = capturingLogger();
    createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: coreModules, logger });
    expect(lines.some((l) => l['level'] === 40 && String(l['msg']).includes('auth.jwtSecret is not set'))).toBe(true);
    const quiet = capturingLogger();
    // With every production secret set (the JWT secret and the AI secrets' encryption key), a kernel is quiet.
    const config = { auth: { jwtSecret: 'k'.repeat(32) }, ai: { encryption: { key: Buffer.alloc(32, 7).toString('base64') } } };
    createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: coreModules, logger: quiet.logger, config });
    expect(quiet.lines).toEqual([]);
  });

  it('rejects invalid configuration before anything starts, naming the path', () => {
    expect(() => createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: coreModules, config: { server: { port: -1 } } })).toThrow(/server\.port: must be >= 0/);
  });

  it('orders modules by dependency and refuses missing or circular ones', () => {
    const a = defineModule({ name: 'a', dependsOn: ['b'] });
    const b = defineModule({ name: 'b' });
    const kernel = createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: [a, b], config: { auth: { jwtSecret: 'k'.repeat(32) } } });
    expect(kernel.modules.map((m) => m.name)).toEqual(['b', 'a']);
    expect(() => createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: [a], logger: pino({ level: 'silent' }) })).toThrow(/needs module "b"/);
    const c = defineModule({ name: 'c', dependsOn: ['d'] });
    const d = defineModule({ name: 'd', dependsOn: ['c'] });
    expect(() => createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: [c, d], logger: pino({ level: 'silent' }) })).toThrow(/Circular module dependency/);
  });

  it('refuses two migrations with one name', () => {
    const m = { name: '20260101000000_x', up: { sqlite: [], postgresql: [] }, down: { sqlite: [], postgresql: [] } };
    expect(() =>
      createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: [defineModule({ name: 'x', migrations: [m] }), defineModule({ name: 'y', migrations: [m] })], logger: pino({ level: 'silent' }) }),
    ).toThrow(/share the name/);
  });

  it('runs jobs on their interval once started and stops them on stop', async () => {
    let runs = 0;
    const ticking = defineModule({ name: 'ticking', jobs: [{ name: 'tick', intervalMs: 5, run: async () => void runs++ }] });
    const kernel = createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: [...coreModules, ticking], config: { auth: { jwtSecret: 'k'.repeat(32) } }, logger: pino({ level: 'silent' }) });
    await kernel.start();
    await new Promise((resolve) => setTimeout(resolve, 60));
    await kernel.stop();
    const seen = runs;
    expect(seen).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(runs).toBe(seen);
  });

  it('stops within server.shutdownTimeoutMs when a job does not heed its signal', async () => {
    // A job stuck on a database that stopped answering held the stop until the driver gave up (60 s).
    let started = false;
    const stuck = defineModule({ name: 'stuck', jobs: [{ name: 'stuck', intervalMs: 5, run: () => { started = true; return new Promise<void>(() => undefined); } }] });
    const { logger, lines } = capturingLogger();
    const kernel = createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: [...coreModules, stuck], config: { auth: { jwtSecret: 'k'.repeat(32) }, server: { shutdownTimeoutMs: 300 } }, logger });
    await kernel.start();
    while (!started) await new Promise((resolve) => setTimeout(resolve, 5));
    const stopped = await Promise.race([kernel.stop().then(() => 'stopped'), new Promise((resolve) => setTimeout(() => resolve('held'), 10_000))]);
    expect(stopped).toBe('stopped');
    expect(lines.some((l) => l['level'] === 40 && l['jobs'] === 1 && String(l['msg']).includes('jobs still running'))).toBe(true);
  });

  it('stops within the deadline when a module stop does not end (its database stopped answering)', async () => {
    // A module stop that writes to a database that stopped answering (a conversation turn storing
    // its partial answer) waited for the driver's acquire timeout (60 s) and held the stop.
    const { logger, lines } = capturingLogger();
    let closedAfter = false;
    const stuck = defineModule({ name: 'stuck-stop', onStop: () => new Promise<void>(() => undefined) });
    const later = defineModule({ name: 'later-stop', dependsOn: ['stuck-stop'], onStop: async () => void (closedAfter = true) });
    const kernel = createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: [...coreModules, stuck, later], config: { auth: { jwtSecret: 'k'.repeat(32) }, server: { shutdownTimeoutMs: 300 } }, logger });
    await kernel.start();
    const stopped = await Promise.race([kernel.stop().then(() => 'stopped'), new Promise((resolve) => setTimeout(() => resolve('held'), 10_000))]);
    expect(stopped).toBe('stopped');
    // The modules stopped before it (those that depend on it) still stopped.
    expect(closedAfter).toBe(true);
    expect(lines.some((l) => l['level'] === 40 && l['module'] === 'stuck-stop' && String(l['msg']).includes('did not stop'))).toBe(true);
  });

  it('stops a kernel that never started, and one whose migrations were only inspected', async () => {
    const idle = createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: coreModules, config: { auth: { jwtSecret: 'k'.repeat(32) } }, logger: pino({ level: 'silent' }) });
    await expect(idle.stop()).resolves.toBeUndefined();
    const inspected = createKernel({ database: sqliteDatabase({ path: ':memory:' }), modules: coreModules, config: { auth: { jwtSecret: 'k'.repeat(32) } }, logger: pino({ level: 'silent' }) });
    expect((await inspected.migrate.status()).pending.length).toBeGreaterThan(0);
    await expect(inspected.stop()).resolves.toBeUndefined();
  });
});
