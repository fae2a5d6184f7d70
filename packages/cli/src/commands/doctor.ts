import { execFile } from 'node:child_process';
import { access, constants, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import type { CliHost } from '../kernel-runner.js';
import { withKernelOptions } from '../options.js';
import { cliPackageJson } from '../package-info.js';
import { checkPortFree, describeBindFailure } from '../port-check.js';

type Status = 'ok' | 'warn' | 'fail';

interface CheckResult {
  name: string;
  status: Status;
  detail: string;
}

interface DoctorFlags extends KernelFlags {
  json?: boolean;
}

/** How long the database check waits for a connection before reporting a failure. */
const databaseTimeoutMs = 10_000;

export const doctorCommand = {
  register(program: Command): void {
    withKernelOptions(program.command('doctor').description('Check this machine and configuration: Node.js, uWebSockets.js, database, port, optional tools.'))
      .option('--json', 'print the checks as JSON')
      .addHelpText(
        'after',
        '\nEach check is ok, warn (works, with a caveat or a missing optional tool) or fail (start would not work).\nExits 1 when any check fails. A missing SQLite file is not created.',
      )
      .action((flags: DoctorFlags) => doctor(flags));
  },
};

async function doctor(flags: DoctorFlags): Promise<void> {
  const [{ loadUwsTransport }, { createCliHost, stopQuietly }] = await Promise.all([import('@trellis/host'), import('../kernel-runner.js')]);
  const results: CheckResult[] = [];
  const add = (name: string, status: Status, detail: string) => results.push({ name, status, detail });

  add('Node.js', ...checkNode());

  const uws = await loadUwsTransport();
  add('uWebSockets.js', uws.ok ? 'ok' : 'warn', uws.ok ? `native binary loads (${process.platform}-${process.arch}, ABI ${process.versions.modules})` : `cannot load (${uws.reason}); the host falls back to the node:http transport`);

  let cli: CliHost | undefined;
  try {
    cli = await createCliHost(flags, { oneShot: true, secrets: 'read' });
    add('configuration', 'ok', cli.loaded.file ? `valid (${cli.loaded.file})` : 'valid (defaults, environment and flags; no file)');
    add('modules', 'ok', `${cli.modules.map((m) => m.name).join(', ')}${cli.modulesFile ? ` (from ${cli.modulesFile})` : ' (built-in)'}`);
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    add('configuration', 'fail', error.message);
  }

  if (cli) {
    const { config, host } = cli;
    if (config.server.transport === 'uws' && !uws.ok) add('transport', 'warn', 'server.transport is uws but the binary cannot load: node:http will be used');
    else add('transport', 'ok', `${config.server.transport}`);

    const database = await checkDatabase(cli);
    const connected = database.some((c) => c.name === 'database' && c.status === 'ok' && c.detail.endsWith('answers'));
    for (const check of database) add(check.name, check.status, check.detail);
    const secrets = await checkSecrets(cli, connected);
    if (connected) await stopQuietly(host.kernel, cli.log);

    const { host: address, port } = config.server;
    if (port === 0) add('port', 'ok', `0: a free port is picked at start (${address})`);
    else {
      const free = await checkPortFree(address, port);
      add('port', free.ok ? 'ok' : 'warn', free.ok ? `${address}:${port} is free` : `${describeBindFailure(address, port, free.code)} (fine if it is this Trellis host)`);
    }

    for (const check of secrets) add(check.name, check.status, check.detail);
  }

  add('espeak-ng', ...(await checkTool('espeak-ng', ['--version'], 'optional; POST /tool/speech needs it (@trellis/speech-espeak runs it as a separate process): apt-get install espeak-ng')));

  if (flags.json) {
    process.stdout.write(`${JSON.stringify({ ok: !results.some((r) => r.status === 'fail'), checks: results }, null, 2)}\n`);
  } else {
    const width = Math.max(...results.map((r) => r.name.length));
    process.stdout.write(`Trellis doctor (${cliPackageJson().version})\n`);
    for (const r of results) {
      process.stdout.write(`  ${r.status.padEnd(4)}  ${r.name.padEnd(width)}  ${r.detail.replace(/\n/g, `\n  ${' '.repeat(width + 6)}`)}\n`);
    }
    const failed = results.filter((r) => r.status === 'fail').length;
    const warned = results.filter((r) => r.status === 'warn').length;
    process.stdout.write(`${failed} failed, ${warned} warning(s), ${results.length - failed - warned} ok.\n`);
  }
  if (results.some((r) => r.status === 'fail')) throw new CliError('doctor: at least one required check failed.');
}

function checkNode(): [Status, string] {
  const wanted = cliPackageJson().engines?.node ?? '>=20.19';
  const min = /(\d+)\.(\d+)/.exec(wanted);
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  if (!min) return ['ok', process.versions.node];
  const ok = major > Number(min[1]) || (major === Number(min[1]) && minor >= Number(min[2]));
  return [ok ? 'ok' : 'fail', `${process.versions.node} (needs ${wanted})`];
}

async function checkDatabase(cli: CliHost): Promise<CheckResult[]> {
  const { config, host } = cli;
  const url = config.database.url;
  const description = host.kernel.database.description;
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\//, '') || './trellis.db';
    if (path === ':memory:') return [{ name: 'database', status: 'warn', detail: 'sqlite::memory: works, but every restart starts from an empty database' }];
    const file = resolve(path);
    const exists = await stat(file).then(
      () => true,
      () => false,
    );
    if (!exists) {
      const writable = await access(dirname(file), constants.W_OK).then(
        () => true,
        () => false,
      );
      return [
        writable
          ? { name: 'database', status: 'ok', detail: `${file} does not exist yet; it is created at start` }
          : { name: 'database', status: 'fail', detail: `${file} does not exist and its folder is not writable` },
      ];
    }
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const status = await Promise.race([
      host.kernel.migrate.status(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${databaseTimeoutMs / 1000} s`)), databaseTimeoutMs);
      }),
    ]);
    const pending = status.pending.length;
    return [
      { name: 'database', status: 'ok', detail: `${description} answers` },
      {
        name: 'migrations',
        status: pending === 0 ? 'ok' : config.database.migrateOnStart ? 'ok' : 'warn',
        detail:
          pending === 0
            ? `up to date (${status.executed.length} applied)`
            : config.database.migrateOnStart
              ? `${pending} pending; applied at start (database.migrateOnStart)`
              : `${pending} pending and database.migrateOnStart is false: run trellis migrate up`,
      },
    ];
  } catch (error) {
    return [{ name: 'database', status: 'fail', detail: `${description} does not answer: ${(error as Error).message}` }];
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Where `auth.jwtSecret` and `ai.encryption.key` come from (the configuration, the secrets file, or
 * nowhere), and whether the stored AI model secrets open with the key start would use.
 */
async function checkSecrets(cli: CliHost, connected: boolean): Promise<CheckResult[]> {
  const { config, host, loaded } = cli;
  const { applySecretsFile } = await import('@trellis/host');
  const outcome = applySecretsFile(loaded.config, 'read', host.kernel.database.description);
  const checks: CheckResult[] = [];
  if (config.auth.jwtSecret) checks.push({ name: 'JWT secret', status: 'ok', detail: 'auth.jwtSecret is set' });
  else if (outcome.read.length) {
    checks.push({
      name: 'secrets file',
      status: outcome.loosePermissions ? 'warn' : 'ok',
      detail: `${outcome.file} supplies ${outcome.read.map((name) => (name === 'jwtSecret' ? 'auth.jwtSecret' : 'ai.encryption.key')).join(' and ')}${outcome.loosePermissions ? '; other users can read it: chmod 600 it' : ' (owner-only)'}; back it up with the database`,
    });
  } else if (outcome.file) {
    checks.push({ name: 'secrets file', status: 'ok', detail: `${outcome.file} does not exist yet: start generates auth.jwtSecret and ai.encryption.key into it (owner-only)` });
  } else {
    checks.push({ name: 'JWT secret', status: 'warn', detail: 'auth.jwtSecret is not set and this database has no secrets file: each process generates its own, sessions end at restart (development only); set TRELLIS_JWT_SECRET' });
  }
  if (!connected || !cli.modules.some((m) => m.name === 'ai')) return checks;
  const { AiModelService } = await import('@trellis/core');
  try {
    const { checked, unreadable } = await host.kernel.get(AiModelService).unreadableSecrets(host.kernel.fork());
    checks.push(
      unreadable.length
        ? { name: 'AI model secrets', status: 'fail', detail: `${unreadable.length} of ${checked} cannot be decrypted with the configured key (models ${[...new Set(unreadable.map((u) => u.id))].slice(0, 5).join(', ')}): start refuses (ai_secrets_unreadable); restore the key that wrote them (docs/errors.md)` }
        : { name: 'AI model secrets', status: 'ok', detail: checked ? `${checked} stored, all readable with the configured key` : 'none stored' },
    );
  } catch (error) {
    // The ai tables are not there yet (pending migrations): nothing stored.
    if (!/no such table|does not exist/i.test((error as Error).message)) throw error;
  }
  return checks;
}

function checkTool(command: string, args: string[], hint: string): Promise<[Status, string]> {
  return new Promise((resolvePromise) => {
    execFile(command, args, { timeout: 5_000 }, (error, stdout) => {
      if (error) resolvePromise(['warn', `not found; ${hint}`]);
      else resolvePromise(['ok', stdout.trim().split('\n')[0] ?? command]);
    });
  });
}
