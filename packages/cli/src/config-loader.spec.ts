import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildConfigSchema, coreModules, describeSchema, type ObjectNode, type Shape } from '@trellis/core';
import { adaptersModule, consoleModule } from '@trellis/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError, envNameForPath, environmentVariables, loadConfigWithSources, pathForEnvName, sourceOfPath } from './config-loader.js';

describe('loadConfig', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trellis-config-'));
    await writeFile(join(dir, 'file.json'), JSON.stringify({ server: { port: 1000, host: '0.0.0.0', basePath: '/file' }, log: { level: 'debug' } }));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('layers file < TRELLIS__ paths < short TRELLIS_ variables < flags, and records who set what', async () => {
    const env = {
      TRELLIS__SERVER__PORT: '2000',
      TRELLIS__SERVER__BASE_PATH: '/generic',
      TRELLIS__SERVER__MAX_BODY_BYTES: '4096',
      TRELLIS_PORT: '3000',
      TRELLIS_HOST: '::1',
    };
    const loaded = await loadConfigWithSources({ config: 'file.json', port: 4000 }, env, dir);
    expect(loaded.config).toEqual({
      server: { port: 4000, host: '::1', basePath: '/generic', maxBodyBytes: '4096' },
      log: { level: 'debug' },
    });
    expect(loaded.file).toBe(join(dir, 'file.json'));
    expect(sourceOfPath(loaded, 'server.port', dir)).toBe('--port');
    expect(sourceOfPath(loaded, 'server.host', dir)).toBe('TRELLIS_HOST');
    expect(sourceOfPath(loaded, 'server.basePath', dir)).toBe('TRELLIS__SERVER__BASE_PATH');
    expect(sourceOfPath(loaded, 'log.level', dir)).toBe('file.json');
  });

  it('reads TRELLIS_CONFIG, and ./trellis.config.json only when neither it nor --config is given', async () => {
    expect((await loadConfigWithSources({}, { TRELLIS_CONFIG: 'file.json' }, dir)).config).toMatchObject({ server: { port: 1000 } });
    expect(await loadConfigWithSources({}, {}, dir)).toMatchObject({ config: {}, file: undefined });
    const own = await mkdtemp(join(tmpdir(), 'trellis-config-'));
    try {
      await writeFile(join(own, 'trellis.config.json'), JSON.stringify({ server: { port: 5 } }));
      expect((await loadConfigWithSources({}, {}, own)).config).toEqual({ server: { port: 5 } });
      await expect(loadConfigWithSources({ config: 'missing.json' }, {}, own)).rejects.toThrow(CliError);
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });

  it('parses a TRELLIS__ value that starts with { or [ as JSON, and keeps it a string when it is not JSON', async () => {
    const loaded = await loadConfigWithSources({}, { TRELLIS__SERVER__CORS_ORIGINS: '["https://a.example"]', TRELLIS__PUBLIC_URL: '[not json' }, dir);
    expect(loaded.config).toEqual({ server: { corsOrigins: ['https://a.example'] }, publicUrl: '[not json' });
    expect(sourceOfPath(loaded, 'server.corsOrigins[0]', dir)).toBe('TRELLIS__SERVER__CORS_ORIGINS');
  });

  it('does not share state between loads of the same .mjs file', async () => {
    await writeFile(join(dir, 'shared.mjs'), 'export default { server: { port: 1 } };\n');
    const first = await loadConfigWithSources({ config: 'shared.mjs', port: 9 }, {}, dir);
    expect(first.config).toEqual({ server: { port: 9 } });
    const second = await loadConfigWithSources({ config: 'shared.mjs' }, {}, dir);
    expect(second.config).toEqual({ server: { port: 1 } });
  });

  it('ignores TRELLIS_ variables that are not settings (TRELLIS_TEST_*, TRELLIS_DEBUG)', async () => {
    const loaded = await loadConfigWithSources({}, { TRELLIS_TEST_POSTGRES_URL: 'postgres://x', TRELLIS_DEBUG: '1', TRELLIS_LOG_FORMAT: 'json' }, dir);
    expect(loaded.config).toEqual({});
  });
});

describe('environment variable names', () => {
  const sections: Record<string, ObjectNode<Shape>> = {};
  for (const module of [...coreModules, adaptersModule, consoleModule]) if (module.config) sections[module.name] = module.config;
  const paths = describeSchema(buildConfigSchema(sections)).map((row) => row.path);

  it('every documented setting round-trips through its TRELLIS__ name', () => {
    expect(paths.length).toBeGreaterThan(10);
    for (const path of paths) expect(pathForEnvName(envNameForPath(path)), path).toBe(path);
    expect(envNameForPath('server.maxBodyBytes')).toBe('TRELLIS__SERVER__MAX_BODY_BYTES');
  });

  it('every short variable sets a path that exists', () => {
    for (const variable of environmentVariables) if (variable.path) expect(paths, variable.name).toContain(variable.path);
  });
});
