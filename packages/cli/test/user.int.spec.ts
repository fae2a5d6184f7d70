import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { testDatabases, transports } from '@trellis/test-support';
import { cliDatabase, getJson, postJson, runCli, runCliInProcess, startCli, tempDir } from './support/cli.js';

// The first user, the one whose password comes on stdin, and the hosts run the built bin in child
// processes (each boots Node and the framework: on a busy CI machine that takes a while, so the
// limit is generous; nothing here asserts timings). The refusals run the same program in process.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(testDatabases())('trellis user create on $name', (db) => {
  let dir: { path: string; remove(): Promise<void> };
  let database: { url: string; drop(): Promise<void> };
  let developerId: string;
  let stdinUserId: string;
  beforeAll(async () => {
    dir = await tempDir();
    database = await cliDatabase(db, dir.path, 'users.db');
  });
  afterAll(async () => {
    await database?.drop();
    await dir?.remove();
  });

  const create = (args: string[], input?: string) => runCli(['user', 'create', ...args, '--database', database.url], { cwd: dir.path, input });
  const createInProcess = (args: string[]) => runCliInProcess(['user', 'create', ...args, '--database', database.url], { cwd: dir.path });

  it('creates a user on a fresh database (applying migrations) and prints its id', async () => {
    const result = await create(['--email', 'Dev@Example.com', '--password', 'correct horse battery', '--name', 'Devi', '--developer']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toMatch(uuid);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
    developerId = result.stdout.trim();
  });

  it('exits 1 with a clear message when the email is taken (compared case-insensitively)', async () => {
    const result = await createInProcess(['--email', 'dev@example.com', '--password', 'another long password']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('trellis: An account with the email dev@example.com already exists. (email_taken)');
  });

  it.each([
    [['--email', 'not-an-email', '--password', 'long enough password'], '--email: "not-an-email" is not a valid email address.'],
    [['--email', 'short@example.com', '--password', 'short'], 'The password must be at least 8 characters long. (weak_password)'],
    [['--email', 'nopass@example.com'], 'A password is required: --password <password> or --password-stdin.'],
    [['--email', 'both@example.com', '--password', 'long enough password', '--password-stdin'], 'Give either --password or --password-stdin, not both.'],
    [['--email', 'blank@example.com', '--password', 'long enough password', '--name', '  '], '--name must be 1 to 200 characters long.'],
  ])('%j is refused with exit 2', async (args, message) => {
    const result = await createInProcess(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
  });

  it('reads the password from stdin and prints JSON with --json', async () => {
    const result = await create(['--email', 'admin@example.com', '--password-stdin', '--site-admin', '--administrator', '--json'], 'piped secret password\nignored second line\n');
    expect(result.code, result.stderr).toBe(0);
    const user = JSON.parse(result.stdout);
    expect(user).toMatchObject({ email: 'admin@example.com', name: 'admin', status: 'active', isSiteAdmin: true, isAdministrator: true, isDeveloper: false });
    expect(user.id).toMatch(uuid);
    expect(user).not.toHaveProperty('passwordHash');
    stdinUserId = user.id;
  });

  describe.each(transports)('then over HTTP (%s)', (transport) => {
    it('the created users log in with their passwords and carry their roles', async () => {
      const server = await startCli(['--port', '0', '--database', database.url, '--transport', transport], { cwd: dir.path });
      try {
        const login = await postJson(`${server.url}/auth/login`, { email: 'dev@example.com', password: 'correct horse battery' });
        expect(login.status).toBe(200);
        const me = await getJson(`${server.url}/auth/me`, login.body.token);
        expect(me.status).toBe(200);
        expect(me.body.user).toMatchObject({ id: developerId, email: 'dev@example.com', name: 'Devi', isDeveloper: true, isSiteAdmin: false, isAdministrator: false });

        const admin = await postJson(`${server.url}/auth/login`, { email: 'admin@example.com', password: 'piped secret password' });
        expect(admin.status).toBe(200);
        expect(admin.body.user).toMatchObject({ id: stdinUserId, isSiteAdmin: true, isAdministrator: true });

        const wrong = await postJson(`${server.url}/auth/login`, { email: 'dev@example.com', password: 'not the password' });
        expect(wrong.status).toBe(401);
        expect(wrong.body.error).toBe('invalid_credentials');
      } finally {
        expect((await server.stop()).code).toBe(0);
      }
    });
  });
});
