import { TrellisError } from '../kernel/errors.js';

const MAX_TEXT = 500;

/**
 * What Trellis keeps of a provider's failure: its name, status, the URL without its query, and a
 * short message with every secret removed. Never the request (the conversation) or the response
 * body, so logging it at error level reveals neither the user's messages nor an echoed key.
 */
export class ProviderFailure extends Error {
  override name = 'ProviderFailure';
  /** The failure's own name (`AI_APICallError`, `TypeError`, ...). */
  readonly kind: string;
  readonly statusCode?: number;
  readonly url?: string;

  constructor(input: { kind: string; message: string; statusCode?: number; url?: string; cause?: unknown; stack?: string }) {
    super(input.message, input.cause === undefined ? undefined : { cause: input.cause });
    this.kind = input.kind;
    if (input.statusCode !== undefined) this.statusCode = input.statusCode;
    if (input.url !== undefined) this.url = input.url;
    if (input.stack !== undefined) this.stack = input.stack;
  }
}

/** `text` with every secret replaced by `***` and cut to a readable length. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) if (secret && secret.length >= 4) out = out.split(secret).join('***');
  return out.length > MAX_TEXT ? `${out.slice(0, MAX_TEXT)}...` : out;
}

/** The text of anything thrown: an Error's message, a vendor's `{ error: { message } }` or `{ message }`, else JSON. */
export function messageOf(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const record = value as { message?: unknown; error?: unknown; type?: unknown };
    if (typeof record.message === 'string') return record.message;
    if (record.error && typeof record.error === 'object' && typeof (record.error as { message?: unknown }).message === 'string') {
      const inner = record.error as { message: string; type?: unknown };
      return typeof inner.type === 'string' ? `${inner.message} (${inner.type})` : inner.message;
    }
    if (typeof record.error === 'string') return record.error;
    try {
      return JSON.stringify(value);
    } catch {
      return Object.prototype.toString.call(value);
    }
  }
  return String(value);
}

const safeUrl = (value: unknown): string | undefined => {
  if (typeof value !== 'string') return undefined;
  try {
    const url = new URL(value);
    return `${url.origin}${url.pathname}`;
  } catch {
    return undefined;
  }
};

/** A `ProviderFailure` summarising `value` and up to two of its causes, secrets removed. */
export function summariseFailure(value: unknown, secrets: readonly string[], depth = 0): ProviderFailure | undefined {
  if (value === undefined || value === null) return undefined;
  if (value instanceof ProviderFailure && depth === 0) return value;
  const error = value instanceof Error ? value : undefined;
  const record = (typeof value === 'object' ? value : {}) as { statusCode?: unknown; status?: unknown; url?: unknown };
  const statusCode = typeof record.statusCode === 'number' ? record.statusCode : typeof record.status === 'number' ? record.status : undefined;
  const message = redactSecrets(messageOf(value), secrets);
  const kind = error ? error.name : typeof value;
  // The frames only: the stack's first line repeats the unredacted message.
  const frames = error?.stack?.split('\n').filter((line) => /^\s+at /.test(line)).join('\n');
  return new ProviderFailure({
    kind,
    message,
    statusCode,
    url: safeUrl(record.url),
    cause: depth < 2 && error?.cause !== undefined ? summariseFailure(error.cause, secrets, depth + 1) : undefined,
    stack: `ProviderFailure: ${message}${frames ? `\n${frames}` : ''}`,
  });
}

/**
 * A provider's error made safe to log, store and answer: a `TrellisError` keeps its kind, code,
 * status and extra fields with its message redacted and its cause summarised (`ProviderFailure`);
 * anything else becomes a `ProviderFailure`. Aborts pass as they are.
 */
export function redactProviderError(error: unknown, secrets: readonly string[]): unknown {
  if (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')) return error;
  if (error instanceof TrellisError) {
    const message = redactSecrets(error.message, secrets);
    if (error.cause === undefined && message === error.message) return error;
    return new TrellisError(error.kind, error.code, message, {
      cause: error.cause instanceof ProviderFailure ? error.cause : summariseFailure(error.cause, secrets),
      details: error.details,
      extra: error.extra,
      headers: error.headers,
      status: error.statusOverride,
      expose: error.exposeOverride,
    });
  }
  return summariseFailure(error, secrets);
}
