import { chmodSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import type { TrellisConfigInput } from '@trellis/core';
import type { Logger } from 'pino';

/** What the secrets file holds: the values the host generated because the configuration set none. */
interface StoredSecrets {
  jwtSecret?: string;
  aiEncryptionKey?: string;
}

/**
 * `read`: use the file when it exists, never write it (commands that issue no tokens and touch no
 * secret: `openapi`, `doctor`, `migrate`). `persist` (default): also create it, or add a missing
 * value, on first start.
 */
export type SecretsFileMode = 'persist' | 'read';

/** What the host did with its secrets file, logged once the kernel has a logger. */
export interface SecretsFileOutcome {
  file: string | undefined;
  /** The configuration with the file's values filled in where the user set none. */
  config: TrellisConfigInput;
  /** Values generated and written now (first start). */
  generated: string[];
  /** Values read from the file. */
  read: string[];
  /** The file is readable or writable by group or others. */
  loosePermissions: boolean;
}

/**
 * Where the host keeps generated secrets: `database.secretsFile`, else beside a SQLite file
 * database (`<file>.secrets.json`). `undefined` for `sqlite::memory:` and PostgreSQL, whose
 * processes may run on several machines: set the secrets in their configuration.
 */
export function secretsFileFor(config: TrellisConfigInput | undefined, databaseUrl = config?.database?.url ?? 'sqlite:./trellis.db'): string | undefined {
  const explicit = config?.database?.secretsFile;
  if (explicit) return resolve(explicit);
  const url = databaseUrl;
  if (!url.startsWith('sqlite:')) return undefined;
  const path = url.slice('sqlite:'.length).replace(/^\/\//, '').split('?', 1)[0] || './trellis.db';
  if (path === ':memory:' || path.startsWith('file:')) return undefined;
  return `${resolve(path)}.secrets.json`;
}

const generators: Record<keyof StoredSecrets, () => string> = {
  jwtSecret: () => randomBytes(48).toString('base64url'),
  aiEncryptionKey: () => randomBytes(32).toString('base64'),
};

/**
 * Fills in `auth.jwtSecret` and `ai.encryption.key` from the secrets file where the configuration
 * sets neither, generating them once (owner-only file) so a restart keeps logins and stored AI
 * model keys working. A configured `auth.jwtSecret` without `ai.encryption.key` keeps deriving
 * the key from it (as before the file existed), so secrets stored that way stay readable.
 */
export function applySecretsFile(input: TrellisConfigInput | undefined, mode: SecretsFileMode = 'persist', databaseUrl?: string): SecretsFileOutcome {
  const config = structuredClone(input ?? {}) as TrellisConfigInput;
  const file = secretsFileFor(config, databaseUrl);
  const outcome: SecretsFileOutcome = { file, config, generated: [], read: [], loosePermissions: false };
  const ai = (config['ai'] ?? {}) as { encryption?: { key?: string } };
  const wanted: Array<keyof StoredSecrets> = [];
  if (!config.auth?.jwtSecret) wanted.push('jwtSecret', ...(ai.encryption?.key ? [] : (['aiEncryptionKey'] as const)));
  if (!file || wanted.length === 0) return outcome;

  let stored: StoredSecrets = {};
  let exists = true;
  try {
    stored = parseSecrets(readFileSync(file, 'utf8'), file);
    outcome.loosePermissions = process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    exists = false;
  }
  const missing = wanted.filter((name) => !stored[name]);
  if (missing.length && mode === 'persist') {
    for (const name of missing) stored[name] = generators[name]();
    // Another process on the same database created the file first: use its values.
    if (!writeSecrets(file, stored, exists)) return applySecretsFile(input, 'read', databaseUrl);
    outcome.generated = missing;
  }
  for (const name of wanted) {
    const value = stored[name];
    if (!value) continue;
    if (!outcome.generated.includes(name)) outcome.read.push(name);
    if (name === 'jwtSecret') config.auth = { ...config.auth, jwtSecret: value };
    else config['ai'] = { ...ai, encryption: { ...ai.encryption, key: value } };
  }
  return outcome;
}

/** Logs what `applySecretsFile` did: a warning the one time secrets are generated, a line on later starts. */
export function reportSecretsFile(outcome: SecretsFileOutcome, log: Logger): void {
  const names = (list: string[]) => list.map((name) => (name === 'jwtSecret' ? 'auth.jwtSecret' : 'ai.encryption.key')).join(' and ');
  if (outcome.generated.length) {
    log.warn(
      { file: outcome.file },
      `⚠ ${names(outcome.generated)} ${outcome.generated.length > 1 ? 'were' : 'was'} not set: generated and saved to ${outcome.file} (owner-only). Back it up with the database: without it every login ends and stored AI model keys cannot be read. In production set them in the configuration instead (docs/configuration.md).`,
    );
  } else if (outcome.read.length) {
    log.info({ file: outcome.file }, `${names(outcome.read)} read from the secrets file`);
  }
  if (outcome.loosePermissions) log.warn({ file: outcome.file }, `⚠ the secrets file ${outcome.file} can be read by other users: chmod 600 it`);
}

function parseSecrets(text: string, file: string): StoredSecrets {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`The secrets file ${file} is not valid JSON: restore it from a backup (database.secretsFile).`);
  }
  const value = parsed as Record<string, unknown> | null;
  const out: StoredSecrets = {};
  for (const name of ['jwtSecret', 'aiEncryptionKey'] as const) {
    const field = value?.[name];
    if (field === undefined) continue;
    if (typeof field !== 'string' || field.length < 32) throw new Error(`The secrets file ${file} has an invalid ${name}: restore it from a backup (database.secretsFile).`);
    out[name] = field;
  }
  return out;
}

/** Writes the file owner-only; `false` when it was to be created and another process created it first. */
function writeSecrets(file: string, secrets: StoredSecrets, replace: boolean): boolean {
  mkdirSync(dirname(file), { recursive: true });
  const text = `${JSON.stringify({ ...secrets, note: 'Generated by Trellis because the configuration sets no auth.jwtSecret / ai.encryption.key. Keep it with the database.' }, null, 2)}\n`;
  // Written aside, then put in place whole: a reader never sees half a file.
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, text, { mode: 0o600 });
  chmodSync(partial, 0o600); // whatever the umask
  try {
    if (replace) renameSync(partial, file);
    else linkSync(partial, file); // fails when another process created the file first
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(partial, { force: true });
  }
}
