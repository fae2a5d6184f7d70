import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli, runCliInProcess, tempDir } from './support/cli.js';

// `trellis start`, --help, --version and no command at all run the built bin in child processes
// (the exit codes a shell sees; a child boots Node and the framework, which on a busy CI machine
// takes a while, so the limit is generous; nothing here asserts timings). The other commands run
// the same program in process (`runCliInProcess`), which resolves with the code the bin exits with.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

// Help, usage errors and configuration errors, as a shell user meets them: exit 0 for help,
// 2 for every usage or configuration error (commander's included), a message on stderr.
describe('trellis: help, usage errors and exit codes', () => {
  let dir: { path: string; remove(): Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => dir?.remove());
  const run = (args: string[], env: Record<string, string> = {}) => (args[0] === 'start' ? runCli : runCliInProcess)(args, { cwd: dir.path, env });
  const runBin = (args: string[]) => runCli(args, { cwd: dir.path });

  it('--help lists every command and exits 0', async () => {
    const result = await runBin(['--help']);
    expect(result.code).toBe(0);
    for (const command of ['init', 'start', 'migrate', 'user', 'openapi', 'doctor']) expect(result.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    expect(result.stdout).toContain('Exit codes: 0 success, 1 failure, 2 usage or configuration error.');
    expect(result.stderr).toBe('');
  });

  it.each([
    [['start', '--help'], ['--port <port>', '--host <address>', '--database <url>', '--transport <name>', '--config <file>', '--no-migrate', 'TRELLIS_PORT', 'TRELLIS_DATABASE']],
    [['migrate', '--help'], ['status', 'up', 'down']],
    [['migrate', 'down', '--help'], ['--steps <n>', '--database <url>']],
    [['migrate', 'status', '--help'], ['--json']],
    [['user', 'create', '--help'], ['--email <email>', '--password <password>', '--password-stdin', '--name <name>', '--site-admin', '--developer', '--administrator']],
    [['openapi', '--help'], ['--out <file>']],
    [['doctor', '--help'], ['--json', 'fail']],
    [['init', '--help'], ['<dir>', '--force']],
    [['help', 'start'], ['--port <port>']],
  ])('%j prints its usage and exits 0', async (args, expected) => {
    const result = await run(args);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: trellis /);
    for (const text of expected) expect(result.stdout).toContain(text);
  });

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    const result = await runBin(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim()).toBe(version);
  });

  it('no command: help on stderr, exit 2', async () => {
    const result = await runBin([]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('Usage: trellis');
  });

  it.each([
    [['bogus'], "unknown command 'bogus'"],
    [['start', '--bogus'], "unknown option '--bogus'"],
    [['start', '--port', 'http'], "argument 'http' is invalid"],
    [['start', '--port', '70000'], "argument '70000' is invalid"],
    [['start', '--transport', 'carrier-pigeon'], 'Allowed choices are uws, node'],
    [['migrate'], 'Usage: trellis migrate'],
    [['migrate', 'sideways'], "unknown command 'sideways'"],
    [['migrate', 'down', '--steps', '0'], "argument '0' is invalid"],
    [['migrate', 'down', '--steps'], "argument missing"],
    [['user', 'create', '--password', 'long enough password'], "required option '-e, --email <email>' not specified"],
    [['init'], "missing required argument 'dir'"],
    [['openapi', 'extra'], 'too many arguments'],
  ])('%j is a usage error: exit 2 with a message', async (args, message) => {
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
  });

  describe('configuration errors (exit 2, every issue with its exact path and source)', () => {
    it('a bad value in the file names the path and the file', async () => {
      await writeFile(join(dir.path, 'bad-port.json'), JSON.stringify({ server: { port: 'eighty' } }));
      for (const args of [['start'], ['migrate', 'status'], ['openapi'], ['user', 'create', '--email', 'a@example.com', '--password', 'long enough password']]) {
        const result = await run([...args, '--config', 'bad-port.json']);
        expect(result.code, args.join(' ')).toBe(2);
        expect(result.stdout).toBe('');
        expect(result.stderr).toContain('Invalid configuration');
        expect(result.stderr).toContain('server.port: must be an integer, got the string "eighty" [set by bad-port.json]');
      }
    });

    it('an unknown key is rejected, with the known ones listed', async () => {
      await writeFile(join(dir.path, 'typo.json'), JSON.stringify({ server: { prot: 8080 }, databse: {} }));
      const result = await run(['start', '--config', 'typo.json']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('server.prot: is not a known option (known: host, port, transport');
      expect(result.stderr).toContain('databse: is not a known option');
    });

    it('reports every problem at once', async () => {
      await writeFile(join(dir.path, 'many.json'), JSON.stringify({ server: { port: -1, transport: 'smoke' }, auth: { jwtSecret: 'short' }, log: { level: 'loud' } }));
      const result = await run(['openapi', '--config', 'many.json']);
      expect(result.code).toBe(2);
      for (const path of ['server.port:', 'server.transport:', 'auth.jwtSecret:', 'log.level:']) expect(result.stderr).toContain(`  - ${path}`);
    });

    it('names the environment variable that set a bad value', async () => {
      const short = await run(['start'], { TRELLIS_PORT: 'http' });
      expect(short.code).toBe(2);
      expect(short.stderr).toContain('server.port: must be an integer, got the string "http" [set by TRELLIS_PORT]');

      const generic = await run(['openapi'], { TRELLIS__SERVER__MAX_BODY_BYTES: 'lots', TRELLIS__SERVER__NOPE: '1' });
      expect(generic.code).toBe(2);
      expect(generic.stderr).toContain('server.maxBodyBytes: must be an integer, got the string "lots" [set by TRELLIS__SERVER__MAX_BODY_BYTES]');
      expect(generic.stderr).toContain('server.nope: is not a known option');
      expect(generic.stderr).toContain('[set by TRELLIS__SERVER__NOPE]');
    });

    it('reads ./trellis.config.json when no --config is given', async () => {
      const own = await tempDir();
      try {
        await writeFile(join(own.path, 'trellis.config.json'), JSON.stringify({ log: { level: 'chatty' } }));
        const result = await runCliInProcess(['openapi'], { cwd: own.path });
        expect(result.code).toBe(2);
        expect(result.stderr).toContain('log.level: must be one of');
        expect(result.stderr).toContain('[set by trellis.config.json]');
      } finally {
        await own.remove();
      }
    });

    it('a missing or unparseable file, or a file that is not an object, is a usage error', async () => {
      await writeFile(join(dir.path, 'broken.json'), '{ "server": ');
      await writeFile(join(dir.path, 'list.json'), '[1, 2]');
      const missing = await run(['start', '--config', 'nowhere.json']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/Cannot read the configuration file .*nowhere\.json: the file does not exist/);
      const broken = await run(['start', '--config', 'broken.json']);
      expect(broken.code).toBe(2);
      expect(broken.stderr).toContain('Cannot read the configuration file');
      const list = await run(['start', '--config', 'list.json']);
      expect(list.code).toBe(2);
      expect(list.stderr).toContain('must hold an object');
    });

    it('an unsupported database URL is a usage error', async () => {
      const result = await run(['migrate', 'status', '--database', 'mysql://localhost/x']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('database.url: Unsupported database URL "mysql://localhost/x"');
    });

    it('a .mjs configuration file works, and flags win over the environment and the file', async () => {
      await writeFile(join(dir.path, 'base.mjs'), 'export default { server: { basePath: "/from-file" } };\n');
      const fromFile = await run(['openapi', '--config', 'base.mjs']);
      expect(fromFile.code).toBe(0);
      expect(JSON.parse(fromFile.stdout).servers[0].url).toBe('/from-file');
      const fromEnv = await run(['openapi', '--config', 'base.mjs'], { TRELLIS__SERVER__BASE_PATH: '/from-env' });
      expect(JSON.parse(fromEnv.stdout).servers[0].url).toBe('/from-env');
    });
  });

  it('a failure that is not a usage error exits 1 with one line and no stack', async () => {
    const result = await run(['migrate', 'status', '--database', 'postgres://nobody@127.0.0.1:1/none']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^trellis: Cannot connect to the database postgres:\/\/nobody@127\.0\.0\.1:1\/none: .*ECONNREFUSED/m);
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});
