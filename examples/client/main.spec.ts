import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createHost, type Host } from '@trellis/host';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { runClientExample } from './main.js';

describe('the @trellis/client example against a running host', () => {
  let host: Host;
  beforeAll(async () => {
    host = createHost({ config: { server: { port: 0, host: '127.0.0.1' }, auth: { jwtSecret: 'example-secret-example-secret-0123456' } }, database: sqliteDatabase({ path: ':memory:' }), logger: pino({ level: 'silent' }) });
    await host.start();
  });
  afterAll(() => host?.stop());

  it('signs up, deploys a block, runs it with its deployment token and follows the events', async () => {
    const lines: string[] = [];
    const result = await runClientExample(host.url, (line) => lines.push(line));
    expect(result.streamed).toBe('gardens in the spring ');
    expect(result.output).toBe('4 words about gardens in the spring');
    expect(result.events[0]).toBe('run_start');
    expect(result.events.at(-1)).toBe('run_complete');
    expect(result.channelEpoch).toBeTruthy();
    expect(lines[0]).toMatch(/^deployed block .* as version 1$/);
  });
});
