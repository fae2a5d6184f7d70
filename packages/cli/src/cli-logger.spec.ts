import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createCliLogger } from './cli-logger.js';

/** Everything written to the stream once the logger has flushed. */
async function capture(env: NodeJS.ProcessEnv, log: (logger: ReturnType<typeof createCliLogger>) => void): Promise<string> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  const logger = createCliLogger('info', env, out);
  log(logger);
  logger.flush();
  await new Promise((resolve) => setTimeout(resolve, 50));
  return Buffer.concat(chunks).toString('utf8');
}

describe('createCliLogger', () => {
  it('writes JSON lines when asked (and by default off a terminal), with secrets redacted', async () => {
    for (const env of [{ TRELLIS_LOG_FORMAT: 'json' }, {}]) {
      const text = await capture(env, (log) => log.info({ url: 'http://127.0.0.1:3000', user: { password: 'hunter2' } }, 'trellis is listening'));
      const line = JSON.parse(text.trim()) as Record<string, unknown>;
      expect(line).toMatchObject({ level: 30, msg: 'trellis is listening', url: 'http://127.0.0.1:3000', user: { password: '[redacted]' }, service: 'trellis' });
    }
  });

  it('writes human lines through pino-pretty when asked, without colours off a terminal', async () => {
    const text = await capture({ TRELLIS_LOG_FORMAT: 'pretty' }, (log) => {
      log.info({ url: 'http://127.0.0.1:3000', user: { password: 'hunter2' } }, 'trellis is listening');
      log.debug('not at this level');
      log.error({ err: new Error('port taken') }, 'could not start');
    });
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: trellis is listening\n/);
    expect(text).toContain('url: "http://127.0.0.1:3000"');
    expect(text).toContain('"password": "[redacted]"');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('not at this level');
    expect(text).toMatch(/ERROR: could not start\n[\s\S]*Error: port taken\n\s+at /);
    expect(text).not.toContain('\u001b[');
    expect(() => JSON.parse(text.split('\n')[0]!)).toThrow();
  });
});
