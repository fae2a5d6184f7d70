import { existsSync, readFileSync, statSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { logLines, runCli, startCli, tempDir } from './support/cli.js';

// The README's start command sets no auth.jwtSecret and no ai.encryption.key. The host generates
// them once, beside the SQLite file, so a second start on the same file keeps logins and stored
// AI model keys; a database opened with a key that cannot read its secrets refuses to start.
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

const json = async (url: string, init: { method?: string; token?: string; body?: unknown } = {}) => {
  const response = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: (await response.json()) as any };
};

describe('trellis start without configured secrets, twice on one SQLite file', () => {
  let dir: { path: string; remove(): Promise<void> };
  let database: string;
  let secretsFile: string;
  let token: string;
  let modelId: string;

  beforeAll(async () => {
    dir = await tempDir();
    database = join(dir.path, 'app.db');
    secretsFile = `${database}.secrets.json`;
  });
  afterAll(() => dir?.remove());

  const start = () => startCli(['--port', '0', '--database', `sqlite:${database}`, '--transport', 'node'], { cwd: dir.path });

  it('generates the secrets on first start into an owner-only file beside the database, with one warning', async () => {
    const server = await start();
    try {
      const registered = await json(`${server.url}/auth/register`, { method: 'POST', body: { email: 'keep@example.com', password: 'correct horse battery' } });
      expect(registered.status).toBe(201);
      const login = await json(`${server.url}/auth/login`, { method: 'POST', body: { email: 'keep@example.com', password: 'correct horse battery' } });
      expect(login.status).toBe(200);
      token = login.body.token ?? login.body.accessToken;
      expect(typeof token).toBe('string');
      const model = await json(`${server.url}/ai/models`, { method: 'POST', token, body: { name: 'kept', service: 'openai', conf: { model: 'gpt-4o-mini', apiKey: 'sk-test-kept-across-restarts' } } });
      expect(model.status, JSON.stringify(model.body)).toBe(201);
      modelId = model.body.id;
    } finally {
      await server.stop();
    }
    expect(existsSync(secretsFile)).toBe(true);
    expect(statSync(secretsFile).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(secretsFile, 'utf8'));
    expect(Object.keys(stored)).toEqual(expect.arrayContaining(['jwtSecret', 'aiEncryptionKey']));
    const warnings = logLines(server.stderr()).filter((line) => String(line['msg']).includes(secretsFile));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40 });
    // The JWT-secret warning of a process-only secret is gone.
    expect(server.stderr()).not.toContain('a random secret was generated for this process');
  });

  it('keeps the login and the stored AI model secret working after a restart, without warning again', async () => {
    const server = await start();
    try {
      const me = await json(`${server.url}/auth/me`, { token });
      expect(me.status).toBe(200);
      const model = await json(`${server.url}/ai/models/${modelId}`, { token });
      expect(model.status).toBe(200);
      expect(model.body.conf.apiKey).toBe('********');
    } finally {
      await server.stop();
    }
    expect(server.stderr()).not.toContain('⚠ auth.jwtSecret and ai.encryption.key were not set');
    expect(logLines(server.stderr()).some((line) => line['msg'] === 'auth.jwtSecret and ai.encryption.key read from the secrets file')).toBe(true);
    // doctor opens every stored secret with the key start would use.
    const doctor = await runCli(['doctor', '--json', '--database', `sqlite:${database}`], { cwd: dir.path });
    const checks = JSON.parse(doctor.stdout).checks as Array<{ name: string; status: string; detail: string }>;
    expect(checks.find((c) => c.name === 'secrets file')).toMatchObject({ status: 'ok' });
    expect(checks.find((c) => c.name === 'AI model secrets')).toMatchObject({ status: 'ok', detail: '1 stored, all readable with the configured key' });
  });

  it('refuses to start, naming the model, when the key that wrote the secrets is gone; doctor says so', async () => {
    await rename(secretsFile, `${secretsFile}.lost`);
    try {
      const doctor = await runCli(['doctor', '--json', '--database', `sqlite:${database}`], { cwd: dir.path });
      expect(doctor.code).toBe(1);
      const checks = JSON.parse(doctor.stdout).checks as Array<{ name: string; status: string; detail: string }>;
      expect(checks.find((c) => c.name === 'AI model secrets')).toMatchObject({ status: 'fail' });
      expect(checks.find((c) => c.name === 'AI model secrets')!.detail).toContain(modelId);

      const refused = await runCli(['start', '--port', '0', '--database', `sqlite:${database}`, '--transport', 'node'], { cwd: dir.path });
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain('ai_secrets_unreadable');
      expect(refused.stderr).toContain(modelId);
      expect(refused.stderr).toContain('ai.encryption.onUnreadable=clear');
    } finally {
      await rename(`${secretsFile}.lost`, secretsFile);
    }
    // With the file back, the same database starts again.
    const server = await start();
    expect((await json(`${server.url}/auth/me`, { token })).status).toBe(200);
    await server.stop();
  });

  it('with ai.encryption.onUnreadable=clear, drops the secrets no key opens and starts', async () => {
    await rename(secretsFile, `${secretsFile}.lost`);
    const server = await startCli(['--port', '0', '--database', `sqlite:${database}`, '--transport', 'node'], { cwd: dir.path, env: { TRELLIS__AI__ENCRYPTION__ON_UNREADABLE: 'clear' } });
    try {
      expect(logLines(server.stderr()).find((line) => String(line['msg']).includes('were removed (ai.encryption.onUnreadable=clear)'))).toMatchObject({ level: 40, models: [modelId] });
      // A new secrets file means a new JWT secret: sign in again; the model is there, without its key.
      const login = await json(`${server.url}/auth/login`, { method: 'POST', body: { email: 'keep@example.com', password: 'correct horse battery' } });
      const model = await json(`${server.url}/ai/models/${modelId}`, { token: login.body.token ?? login.body.accessToken });
      expect(model.status).toBe(200);
      expect(model.body.conf).toEqual({ model: 'gpt-4o-mini' });
    } finally {
      await server.stop();
    }
  });
});
