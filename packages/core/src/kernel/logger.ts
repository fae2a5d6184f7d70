import { pino, type Logger } from 'pino';

/** Paths never written to logs: credentials in headers and bodies. */
export const redactedPaths = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.password',
  '*.token',
  '*.access_token',
  '*.refresh_token',
  '*.code_verifier',
  '*.client_secret',
  '*.jwtSecret',
  '*.apiKey',
];

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'trellis' },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
