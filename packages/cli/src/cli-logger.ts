import { redactedPaths } from '@trellis/core';
import { destination, pino, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';

/**
 * The CLI's logger. Logs go to stderr so stdout carries only a command's result (the listening
 * URL, a user id, an OpenAPI document). JSON lines by default; human lines through `pino-pretty`
 * when stderr is a terminal or TRELLIS_LOG_FORMAT=pretty (TRELLIS_LOG_FORMAT=json forces JSON).
 *
 * `output` is where lines go: stderr's file descriptor (2) unless a test passes a stream.
 */
export function createCliLogger(level: string, env: NodeJS.ProcessEnv = process.env, output: number | NodeJS.WritableStream = 2): Logger {
  const terminal = output === 2 && process.stderr.isTTY === true;
  const format = env['TRELLIS_LOG_FORMAT'] ?? (terminal ? 'pretty' : 'json');
  const options = {
    level,
    base: { service: 'trellis' },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (format === 'pretty') {
    // `12:00:01 INFO: trellis is listening` then the fields; colours only on a terminal.
    const pretty = PinoPretty({
      destination: output,
      sync: true,
      colorize: terminal && !env['NO_COLOR'],
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,service',
    });
    return pino(options, pretty);
  }
  return pino(options, typeof output === 'number' ? destination({ dest: output, sync: true }) : output);
}
