import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testDatabases } from '@trellis/test-support';
import { cliDatabase, runCli, runCliInProcess, tempDir } from './support/cli.js';

// The first checklist comes from the built bin in a child process (it boots Node and the
// framework: on a busy CI machine that takes a while, so the limit is generous; nothing here
// asserts timings). The other runs go through the same program in process (`runCliInProcess`).
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

interface DoctorReport {
  ok: boolean;
  checks: Array<{ name: string; status: 'ok' | 'warn' | 'fail'; detail: string }>;
}

const check = (report: DoctorReport, name: string) => report.checks.find((c) => c.name === name);

describe('trellis doctor', () => {
  let dir: { path: string; remove(): Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => dir?.remove());

  it('prints a checklist of ok/warn/fail lines and exits 0 when nothing required fails', async () => {
    const result = await runCli(['doctor', '--database', 'sqlite::memory:'], { cwd: dir.path });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Trellis doctor \(\d+\.\d+\.\d+/);
    expect(result.stdout).toMatch(new RegExp(`^  ok    Node\\.js +${process.versions.node.replace(/\./g, '\\.')} \\(needs >=20\\.19\\)$`, 'm'));
    expect(result.stdout).toMatch(/^ {2}(ok {2}|warn) {2}uWebSockets\.js /m);
    expect(result.stdout).toMatch(/^ {2}ok {4}configuration /m);
    expect(result.stdout).toMatch(/^ {2}warn {2}database +sqlite::memory: works, but every restart starts from an empty database$/m);
    expect(result.stdout).toMatch(/^ {2}(ok {2}|warn) {2}espeak-ng /m);
    expect(result.stdout).toMatch(/^ {2}warn {2}JWT secret +auth\.jwtSecret is not set/m);
    expect(result.stdout).toMatch(/^0 failed, \d+ warning\(s\), \d+ ok\.$/m);
  });

  it('--json gives the same checks for scripts', async () => {
    const result = await runCliInProcess(['doctor', '--json', '--database', 'sqlite::memory:'], { cwd: dir.path, env: { TRELLIS_JWT_SECRET: 'a-doctor-test-secret-of-32-characters' } });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as DoctorReport;
    expect(report.ok).toBe(true);
    expect(report.checks.map((c) => c.name)).toEqual(expect.arrayContaining(['Node.js', 'uWebSockets.js', 'configuration', 'modules', 'transport', 'database', 'port', 'JWT secret', 'espeak-ng']));
    expect(check(report, 'JWT secret')).toMatchObject({ status: 'ok' });
    for (const c of report.checks) expect(['ok', 'warn']).toContain(c.status);
  });

  it('does not create a missing SQLite file, but says it will be created at start', async () => {
    const file = join(dir.path, 'later.db');
    const result = await runCliInProcess(['doctor', '--json', '--database', `sqlite:${file}`], { cwd: dir.path });
    expect(result.code).toBe(0);
    expect(check(JSON.parse(result.stdout), 'database')).toEqual({ name: 'database', status: 'ok', detail: `${file} does not exist yet; it is created at start` });
    expect(existsSync(file)).toBe(false);
    // Nor the secrets file: it says where start will generate them.
    expect(check(JSON.parse(result.stdout), 'secrets file')).toEqual({ name: 'secrets file', status: 'ok', detail: `${file}.secrets.json does not exist yet: start generates auth.jwtSecret and ai.encryption.key into it (owner-only)` });
    expect(existsSync(`${file}.secrets.json`)).toBe(false);
  });

  it('fails (exit 1) when the database does not answer', async () => {
    const result = await runCliInProcess(['doctor', '--database', 'postgres://nobody@127.0.0.1:1/none'], { cwd: dir.path });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ {2}fail {2}database +postgres:\/\/nobody@127\.0\.0\.1:1\/none does not answer: .*ECONNREFUSED/m);
    expect(result.stdout).toMatch(/^1 failed, /m);
    expect(result.stderr).toContain('trellis: doctor: at least one required check failed.');
  });

  it('fails (exit 1) on an invalid configuration, naming the path', async () => {
    await writeFile(join(dir.path, 'bad.json'), JSON.stringify({ server: { port: 'x' } }));
    const result = await runCliInProcess(['doctor', '--config', 'bad.json'], { cwd: dir.path });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^ {2}fail {2}configuration +Invalid configuration/m);
    expect(result.stdout).toContain('server.port: must be an integer');
  });

  it('warns when the configured port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const result = await runCliInProcess(['doctor', '--json', '--database', 'sqlite::memory:'], { cwd: dir.path, env: { TRELLIS_PORT: String(port) } });
      expect(result.code).toBe(0);
      const portCheck = check(JSON.parse(result.stdout), 'port');
      expect(portCheck?.status).toBe('warn');
      expect(portCheck?.detail).toContain(`Port ${port} on 127.0.0.1 is already in use`);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});

describe.each(testDatabases())('trellis doctor on $name', (db) => {
  let dir: { path: string; remove(): Promise<void> };
  let database: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
    database = await cliDatabase(db, dir.path, 'doctor.db');
  });
  afterAll(async () => {
    await database?.drop();
    await dir?.remove();
  });

  it('reaches the database and reports pending migrations, then none after migrate up', async () => {
    // PostgreSQL: the database exists but is empty. SQLite: create the file by migrating nothing yet.
    if (db.name === 'sqlite') expect((await runCliInProcess(['migrate', 'status', '--database', database.url])).code).toBe(0);
    const before = JSON.parse((await runCliInProcess(['doctor', '--json', '--database', database.url], { cwd: dir.path })).stdout) as DoctorReport;
    expect(check(before, 'database')?.status).toBe('ok');
    expect(check(before, 'migrations')?.detail).toMatch(/^\d+ pending; applied at start \(database\.migrateOnStart\)$/);

    const off = JSON.parse((await runCliInProcess(['doctor', '--json', '--database', database.url], { cwd: dir.path, env: { TRELLIS__DATABASE__MIGRATE_ON_START: 'false' } })).stdout) as DoctorReport;
    expect(check(off, 'migrations')).toMatchObject({ status: 'warn' });
    expect(check(off, 'migrations')?.detail).toContain('run trellis migrate up');

    expect((await runCliInProcess(['migrate', 'up', '--database', database.url])).code).toBe(0);
    const after = JSON.parse((await runCliInProcess(['doctor', '--json', '--database', database.url], { cwd: dir.path })).stdout) as DoctorReport;
    expect(check(after, 'migrations')).toMatchObject({ status: 'ok' });
    expect(check(after, 'migrations')?.detail).toMatch(/^up to date \(\d+ applied\)$/);
  });
});
