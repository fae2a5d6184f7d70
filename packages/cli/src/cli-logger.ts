import { redactedPaths } from '@trellis/core';
import { destination, pino, type DestinationStream, type Logger } from 'pino';

/**
 * The CLI's logger. Logs go to stderr so stdout carries only a command's result (the listening
 * URL, a user id, an OpenAPI document). JSON lines by default; short human lines when stderr is a
 * terminal or TRELLIS_LOG_FORMAT=pretty.
 */
export function createCliLogger(level: string, env: NodeJS.ProcessEnv = process.env): Logger {
  const format = env['TRELLIS_LOG_FORMAT'] ?? (process.stderr.isTTY ? 'pretty' : 'json');
  const options = {
    level,
    base: { service: 'trellis' },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (format === 'pretty') return pino(options, prettyStream(process.stderr.isTTY === true));
  return pino(options, destination({ dest: 2, sync: true }));
}

const levelNames: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const levelColours: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
const hiddenKeys = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service']);

/** `12:00:01 INFO  trellis is listening url=http://... transport=uws` */
function prettyStream(colour: boolean): DestinationStream {
  const paint = (code: string, text: string) => (colour ? `\u001b[${code}m${text}\u001b[0m` : text);
  return {
    write(line: string) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        process.stderr.write(line);
        return;
      }
      const level = Number(entry['level']);
      const time = typeof entry['time'] === 'string' ? entry['time'].slice(11, 19) : '';
      const fields = Object.entries(entry)
        .filter(([key]) => !hiddenKeys.has(key))
        .map(([key, value]) => {
          if (key === 'err' && value && typeof value === 'object') {
            const err = value as { message?: string; stack?: string };
            return `\n    ${err.stack ?? err.message ?? JSON.stringify(value)}`;
          }
          return `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`;
        });
      const name = (levelNames[level] ?? String(level)).padEnd(5);
      process.stderr.write(`${paint('90', time)} ${paint(levelColours[level] ?? '0', name)} ${String(entry['msg'] ?? '')}${fields.length ? ` ${paint('90', fields.join(' '))}` : ''}\n`);
    },
  };
}
