import { describe, expect, it } from 'vitest';
import { ConfigError, describeSchema, parseConfig, s } from './schema.js';
import { validateConfig } from './config.js';

describe('config schema', () => {
  const schema = s.object({
    server: s.object({ port: s.int().range(0, 65535).default(8080), host: s.string().default('127.0.0.1') }),
    mode: s.string().oneOf(['a', 'b'] as const).default('a'),
    tags: s.array(s.string()).default([]),
    secret: s.string().min(4).orUndefined(),
  });

  it('fills defaults, including whole omitted sections, and freezes the result', () => {
    const value = parseConfig(schema, {});
    expect(value).toEqual({ server: { port: 8080, host: '127.0.0.1' }, mode: 'a', tags: [] });
    expect(Object.isFrozen(value.server)).toBe(true);
  });

  it('accepts environment-style strings for numbers, booleans and lists', () => {
    expect(parseConfig(schema, { server: { port: '3000' }, tags: 'x, y' })).toMatchObject({ server: { port: 3000 }, tags: ['x', 'y'] });
    expect(parseConfig(s.object({ on: s.boolean().default(false) }), { on: 'true' })).toEqual({ on: true });
  });

  it('rejects unknown keys and bad values, naming each exact path', () => {
    try {
      parseConfig(schema, { server: { port: 70000, hots: 'x' }, mode: 'c', tags: [1], secret: 'ab' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const paths = (error as ConfigError).issues.map((i) => i.path).sort();
      expect(paths).toEqual(['mode', 'secret', 'server.hots', 'server.port', 'tags[0]']);
      expect((error as ConfigError).message).toContain('server.hots: is not a known option (known: port, host)');
    }
  });

  it('validates the kernel configuration with module sections', () => {
    const config = validateConfig({ billing: { currency: 'EUR' } }, { billing: s.object({ currency: s.string().default('USD') }) });
    expect(config['billing']).toEqual({ currency: 'EUR' });
    expect(() => validateConfig({ nope: 1 })).toThrow(/nope: is not a known option/);
    expect(() => validateConfig({ server: { basePath: '/api/' } })).toThrow(/server.basePath/);
    expect(() => validateConfig({ auth: { jwtSecret: 'short' } })).toThrow(/auth.jwtSecret: must be at least 32 characters long/);
  });

  it('describes itself for the configuration reference', () => {
    const rows = describeSchema(schema);
    expect(rows).toContainEqual({ path: 'server.port', type: 'integer', default: '8080', description: undefined });
    expect(rows.find((r) => r.path === 'mode')?.type).toBe('"a" | "b"');
  });
});
