import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getJson, runCli, runCliInProcess, startCli, tempDir } from './support/cli.js';

// The first document and the host come from the built bin in child processes (each boots Node
// and the framework: on a busy CI machine that takes a while, so the limit is generous; nothing
// here asserts timings). The other runs go through the same program in process (`runCliInProcess`).
vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });

describe('trellis openapi', () => {
  let dir: { path: string; remove(): Promise<void> };
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => dir?.remove());

  it('prints a valid OpenAPI 3.1 document on stdout without opening the database', async () => {
    const file = join(dir.path, 'never-opened.db');
    const result = await runCli(['openapi', '--database', `sqlite:${file}`], { cwd: dir.path });
    expect(result.code, result.stderr).toBe(0);
    const document = JSON.parse(result.stdout);
    const validator = new Validator();
    const validation = await validator.validate(document);
    expect(validation.errors ?? []).toEqual([]);
    expect(validator.version).toBe('3.1');
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/healthz', '/auth/login']));
    expect(existsSync(file)).toBe(false);
  });

  it('needs no reachable database at all', async () => {
    const result = await runCliInProcess(['openapi', '--database', 'postgres://nobody@127.0.0.1:1/none'], { cwd: dir.path });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout).openapi).toBe('3.1.0');
  });

  it('--out writes the file (creating folders) and says where; it is the document a running host serves', async () => {
    const out = join(dir.path, 'nested', 'docs', 'openapi.json');
    const result = await runCliInProcess(['openapi', '--out', out], { cwd: dir.path });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(new RegExp(`^Wrote the OpenAPI document \\(\\d+ paths\\) to ${out.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}\\n$`));
    const written = JSON.parse(await readFile(out, 'utf8'));

    const server = await startCli(['--port', '0', '--database', 'sqlite::memory:'], { cwd: dir.path });
    try {
      const served = await getJson(`${server.url}/openapi.json`);
      expect(served.status).toBe(200);
      expect(written).toEqual(served.body);
    } finally {
      await server.stop();
    }
  });

  it('reflects the configuration (server.basePath)', async () => {
    const result = await runCliInProcess(['openapi'], { cwd: dir.path, env: { TRELLIS__SERVER__BASE_PATH: '/api/v1' } });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).servers).toEqual([{ url: '/api/v1' }]);
  });

  it('exits 1 when the file cannot be written', async () => {
    const blocked = join(dir.path, 'a-file');
    await runCliInProcess(['openapi', '--out', blocked], { cwd: dir.path });
    const result = await runCliInProcess(['openapi', '--out', join(blocked, 'inside.json')], { cwd: dir.path });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^trellis: Cannot write .*inside\.json: (EEXIST|ENOTDIR)/m);
  });
});
