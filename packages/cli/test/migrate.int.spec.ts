import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testDatabases } from '@trellis/test-support';
import { cliDatabase, runCli, runCliInProcess, startCli, tempDir } from './support/cli.js';

// `trellis start` and the first status run the built bin in child processes (each boots Node and
// the framework): on a busy CI machine a few of them take a while, so the limit is generous.
// Nothing here asserts timings. The migrate steps in between run the same program in process
// (`runCliInProcess`): dozens of commands, each a second of CPU less.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

interface Status {
  executed: string[];
  pending: string[];
}

describe.each(testDatabases())('trellis migrate on $name', (db) => {
  let dir: { path: string; remove(): Promise<void> };
  let database: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
    database = await cliDatabase(db, dir.path, 'migrate.db');
  });
  afterAll(async () => {
    await database?.drop();
    await dir?.remove();
  });

  const migrate = (...args: string[]) => runCliInProcess(['migrate', ...args, '--database', database.url], { cwd: dir.path });
  const status = async (): Promise<Status> => {
    const result = await migrate('status', '--json');
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as Status;
  };

  // The steps share one database and run in order.
  let all: string[] = [];

  it('status lists every migration as pending on a fresh database, in name order', async () => {
    const fresh = await status();
    expect(fresh.executed).toEqual([]);
    expect(fresh.pending.length).toBeGreaterThan(1);
    all = fresh.pending;
    expect([...all].sort()).toEqual(all);

    // The built bin prints the same, as a shell user sees it.
    const text = await runCli(['migrate', 'status', '--database', database.url], { cwd: dir.path });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe((await migrate('status')).stdout);
    expect(text.stdout).toContain(`pending   ${all[0]}`);
    expect(text.stdout).toContain(`0 executed, ${all.length} pending`);
  });

  it('up applies them all, and a second up has nothing to do', async () => {
    const up = await migrate('up');
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toContain(`Applied ${all.length} migration(s).`);
    for (const name of all) expect(up.stdout).toContain(`applied   ${name}`);
    expect(await status()).toEqual({ executed: all, pending: [] });

    const again = await migrate('up');
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe('Nothing to apply: the database is up to date.');
  });

  it('down reverts the latest one; down --steps n reverts n more', async () => {
    const down = await migrate('down');
    expect(down.code, down.stderr).toBe(0);
    expect(down.stdout).toContain(`reverted  ${all[all.length - 1]}`);
    expect(down.stdout).toContain('Reverted 1 migration(s).');
    expect(await status()).toEqual({ executed: all.slice(0, -1), pending: all.slice(-1) });

    const steps = Math.min(2, all.length - 1);
    const downSteps = await migrate('down', '--steps', String(steps));
    expect(downSteps.code, downSteps.stderr).toBe(0);
    expect(downSteps.stdout).toContain(`Reverted ${steps} migration(s).`);
    expect(await status()).toEqual({ executed: all.slice(0, -1 - steps), pending: all.slice(-1 - steps) });
  });

  it('down --steps beyond the applied ones reverts everything; then down has nothing to do', async () => {
    const rest = await migrate('down', '--steps', String(all.length + 5));
    expect(rest.code, rest.stderr).toBe(0);
    expect(await status()).toEqual({ executed: [], pending: all });

    const none = await migrate('down');
    expect(none.code).toBe(0);
    expect(none.stdout.trim()).toBe('Nothing to revert: no migration has been applied.');
  });

  it('up after a full revert rebuilds the schema', async () => {
    expect((await migrate('up')).code).toBe(0);
    expect(await status()).toEqual({ executed: all, pending: [] });
  });
});

describe.each(testDatabases())('migrations at start on $name', (db) => {
  let dir: { path: string; remove(): Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => dir?.remove());

  it.each([
    ['--no-migrate', ['--no-migrate'], {}],
    ['TRELLIS__DATABASE__MIGRATE_ON_START=false', [], { TRELLIS__DATABASE__MIGRATE_ON_START: 'false' }],
  ] as const)('start with %s leaves pending migrations pending', async (variant, args, env) => {
    {
      const database = await cliDatabase(db, dir.path, `no-migrate-${variant.length}.db`);
      try {
        const server = await startCli(['--port', '0', '--database', database.url, ...args], { cwd: dir.path, env });
        expect((await server.stop()).code, variant).toBe(0);
        expect(server.stderr()).toContain('database has pending migrations');
        const after = JSON.parse((await runCliInProcess(['migrate', 'status', '--json', '--database', database.url])).stdout) as Status;
        expect(after.executed, variant).toEqual([]);
        expect(after.pending.length).toBeGreaterThan(0);
      } finally {
        await database.drop();
      }
    }
  });

  it('start applies pending migrations by default', async () => {
    const database = await cliDatabase(db, dir.path, 'migrate-on-start.db');
    try {
      const server = await startCli(['--port', '0', '--database', database.url], { cwd: dir.path });
      expect((await server.stop()).code).toBe(0);
      const after = JSON.parse((await runCliInProcess(['migrate', 'status', '--json', '--database', database.url])).stdout) as Status;
      expect(after.pending).toEqual([]);
      expect(after.executed.length).toBeGreaterThan(0);
    } finally {
      await database.drop();
    }
  });
});
