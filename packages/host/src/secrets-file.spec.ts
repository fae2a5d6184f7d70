import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applySecretsFile, secretsFileFor } from './secrets-file.js';

describe('the secrets file', () => {
  let dir: string;
  let url: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-secrets-'));
    url = `sqlite:${join(dir, 'app.db')}`;
    file = `${join(dir, 'app.db')}.secrets.json`;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lives beside a SQLite file, or where database.secretsFile says; none for memory or PostgreSQL', () => {
    expect(secretsFileFor({ database: { url } })).toBe(file);
    expect(secretsFileFor({ database: { url: `${url}?synchronous=normal` } })).toBe(file);
    expect(secretsFileFor({ database: { url, secretsFile: join(dir, 'elsewhere.json') } })).toBe(join(dir, 'elsewhere.json'));
    expect(secretsFileFor({ database: { url: 'sqlite::memory:' } })).toBeUndefined();
    expect(secretsFileFor({ database: { url: 'postgres://u@127.0.0.1/db' } })).toBeUndefined();
    expect(secretsFileFor({ database: { url: 'postgres://u@127.0.0.1/db', secretsFile: join(dir, 's.json') } })).toBe(join(dir, 's.json'));
  });

  it('is written once, owner-only, and gives the same secrets on every later start', () => {
    const first = applySecretsFile({ database: { url } });
    expect(first.generated).toEqual(['jwtSecret', 'aiEncryptionKey']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const jwt = first.config.auth?.jwtSecret;
    const key = (first.config['ai'] as { encryption: { key: string } }).encryption.key;
    expect(jwt).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(Buffer.from(key, 'base64')).toHaveLength(32);

    const second = applySecretsFile({ database: { url } });
    expect(second.generated).toEqual([]);
    expect(second.read).toEqual(['jwtSecret', 'aiEncryptionKey']);
    expect(second.config.auth?.jwtSecret).toBe(jwt);
    expect((second.config['ai'] as { encryption: { key: string } }).encryption.key).toBe(key);
  });

  it('leaves configured secrets alone: both set, nothing is written; a JWT secret alone keeps deriving the AI key from it', () => {
    const both = applySecretsFile({ database: { url }, auth: { jwtSecret: 'j'.repeat(40) }, ai: { encryption: { key: Buffer.alloc(32, 1).toString('base64') } } });
    expect(both.generated).toEqual([]);
    expect(existsSync(file)).toBe(false);
    const jwtOnly = applySecretsFile({ database: { url }, auth: { jwtSecret: 'j'.repeat(40) } });
    expect(jwtOnly.config['ai']).toBeUndefined();
    expect(existsSync(file)).toBe(false);
    const keyOnly = applySecretsFile({ database: { url }, ai: { encryption: { key: Buffer.alloc(32, 1).toString('base64') } } });
    expect(keyOnly.generated).toEqual(['jwtSecret']);
    expect((keyOnly.config['ai'] as { encryption: { key: string } }).encryption.key).toBe(Buffer.alloc(32, 1).toString('base64'));
  });

  it('in read mode never writes; adds a missing value to an existing file in persist mode', () => {
    expect(applySecretsFile({ database: { url } }, 'read').read).toEqual([]);
    expect(existsSync(file)).toBe(false);
    writeFileSync(file, JSON.stringify({ jwtSecret: 'k'.repeat(48) }), { mode: 0o600 });
    const added = applySecretsFile({ database: { url } });
    expect(added.read).toEqual(['jwtSecret']);
    expect(added.generated).toEqual(['aiEncryptionKey']);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ jwtSecret: 'k'.repeat(48), aiEncryptionKey: expect.any(String) });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('says when others can read it, and refuses a damaged file', () => {
    applySecretsFile({ database: { url } });
    chmodSync(file, 0o644);
    expect(applySecretsFile({ database: { url } }).loosePermissions).toBe(true);
    writeFileSync(file, '{ not json');
    expect(() => applySecretsFile({ database: { url } })).toThrow(`The secrets file ${file} is not valid JSON`);
  });
});
