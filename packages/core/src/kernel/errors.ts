import {
  DeadlockException,
  DriverException,
  ForeignKeyConstraintViolationException,
  LockWaitTimeoutException,
  NotFoundError,
  NotNullConstraintViolationException,
  UniqueConstraintViolationException,
} from '@mikro-orm/core';

/**
 * One error vocabulary for all of Trellis. Domain code throws `TrellisError`s with a kind (what
 * went wrong, in transport-neutral terms) and a stable snake_case code (which case it is). Only the
 * edge translates kinds, through the tables below, into HTTP statuses and JSON-RPC codes.
 */
export type ErrorKind =
  | 'bad_request'
  | 'unauthenticated'
  | 'payment_required'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'gone'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'validation'
  | 'locked'
  | 'rate_limited'
  | 'internal'
  | 'not_implemented'
  | 'unavailable';

export const httpStatusByKind: Readonly<Record<ErrorKind, number>> = Object.freeze({
  bad_request: 400,
  unauthenticated: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation: 422,
  locked: 423,
  rate_limited: 429,
  internal: 500,
  not_implemented: 501,
  unavailable: 503,
});

/** JSON-RPC 2.0 error codes. -32001 and -32002 are the spec's server-defined codes. */
export const rpcCodeByKind: Readonly<Record<ErrorKind, number>> = Object.freeze({
  bad_request: -32602,
  validation: -32602,
  unauthenticated: -32001,
  forbidden: -32002,
  payment_required: -32603,
  not_found: -32602,
  method_not_allowed: -32601,
  conflict: -32603,
  gone: -32603,
  payload_too_large: -32600,
  unsupported_media_type: -32600,
  locked: -32603,
  rate_limited: -32603,
  internal: -32603,
  not_implemented: -32601,
  unavailable: -32603,
});

export interface ValidationIssue {
  /** Dotted path of the offending field (`teams.0.name`), or `''` for the whole body. */
  field: string;
  /** Name of the failed constraint (`isEmail`, `whitelistValidation`, `required`, ...). */
  constraint: string;
  message: string;
}

export interface TrellisErrorOptions {
  cause?: unknown;
  /** Field-level problems, serialised as `details`. */
  details?: ValidationIssue[];
  /** Extra top-level fields of the error body (`current_version`, `balance`, ...). */
  extra?: Record<string, unknown>;
  /** Extra response headers (`Retry-After`, `WWW-Authenticate`, ...). */
  headers?: Record<string, string>;
  /** Overrides the status the kind maps to, for areas whose table says otherwise. */
  status?: number;
  /**
   * Show the message and extra fields even on a 5xx. For errors whose text is written by Trellis
   * and reveals nothing internal, such as an upstream AI provider being unavailable.
   */
  expose?: boolean;
}

export class TrellisError extends Error {
  override readonly name = 'TrellisError';
  readonly details?: ValidationIssue[];
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;
  readonly statusOverride?: number;
  readonly exposeOverride?: boolean;

  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    options: TrellisErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.details = options.details;
    this.extra = options.extra;
    this.headers = options.headers;
    this.statusOverride = options.status;
    this.exposeOverride = options.expose;
  }

  get status(): number {
    return this.statusOverride ?? httpStatusByKind[this.kind];
  }

  get rpcCode(): number {
    return rpcCodeByKind[this.kind];
  }

  /** Is this error safe to show as is? Internal errors never expose their message. */
  get exposed(): boolean {
    return this.exposeOverride ?? this.status < 500;
  }
}

export const isTrellisError = (value: unknown): value is TrellisError => value instanceof TrellisError;

/** Shorthands for the errors every module throws. */
export const errors = {
  badRequest: (code: string, message: string, options?: TrellisErrorOptions) =>
    new TrellisError('bad_request', code, message, options),
  unauthenticated: (code: string, message: string, options?: TrellisErrorOptions) =>
    new TrellisError('unauthenticated', code, message, options),
  forbidden: (code: string, message: string, options?: TrellisErrorOptions) =>
    new TrellisError('forbidden', code, message, options),
  notFound: (code: string, message: string, options?: TrellisErrorOptions) =>
    new TrellisError('not_found', code, message, options),
  conflict: (code: string, message: string, options?: TrellisErrorOptions) =>
    new TrellisError('conflict', code, message, options),
  validation: (code: string, message: string, options?: TrellisErrorOptions) =>
    new TrellisError('validation', code, message, options),
  internal: (message = 'An internal error occurred.', cause?: unknown) =>
    new TrellisError('internal', 'internal_error', message, { cause }),
};

/**
 * Wraps anything thrown into a TrellisError; unknown errors become an unexposed `internal_error`.
 * Database errors that only bad input can cause (a duplicate, a value the column cannot hold)
 * become 4xx answers rather than 5xx, without revealing SQL: a safety net behind DTO validation.
 */
export function toTrellisError(error: unknown): TrellisError {
  if (error instanceof TrellisError) {
    if (error.cause !== undefined) scrubDatabaseError(error.cause);
    return error;
  }
  scrubDatabaseError(error);
  const database = fromDatabaseError(error);
  if (database) return database;
  return new TrellisError('internal', 'internal_error', 'An internal error occurred.', { cause: error });
}

// PostgreSQL SQLSTATE class 22 is "data exception": a value the column type cannot hold.
const DATA_EXCEPTION = /^22/;

function fromDatabaseError(error: unknown): TrellisError | null {
  // `findOneOrFail` on a row that a concurrent request deleted: the record is gone, not a fault.
  if (error instanceof NotFoundError) return new TrellisError('not_found', 'not_found', 'The record no longer exists.', { cause: error });
  if (!(error instanceof DriverException)) return null;
  if (error instanceof UniqueConstraintViolationException) {
    return new TrellisError('conflict', 'already_exists', 'A record with the same unique value already exists.', { cause: error });
  }
  if (error instanceof ForeignKeyConstraintViolationException) {
    return new TrellisError('conflict', 'reference_conflict', 'The change refers to a record that does not exist, or one still in use.', { cause: error });
  }
  if (error instanceof NotNullConstraintViolationException) {
    return new TrellisError('validation', 'invalid_value', 'A required value is missing.', { cause: error });
  }
  if (error instanceof DeadlockException || error instanceof LockWaitTimeoutException) {
    return new TrellisError('unavailable', 'busy', 'The database is busy; retry the request.', { cause: error, headers: { 'retry-after': '1' } });
  }
  const sqlState = (error as { sqlState?: string; code?: string }).sqlState ?? (error as { code?: string }).code;
  if (typeof sqlState === 'string' && DATA_EXCEPTION.test(sqlState)) {
    return new TrellisError('validation', 'invalid_value', 'A value does not fit the field it is stored in.', { cause: error });
  }
  return null;
}

const scrubbed = new WeakSet<object>();
// Quoted text and `(column)=(value)` pairs in a driver message echo the values of a statement.
const quotedText = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\([^()]*\)=\([^()]*\)/g;

/**
 * Removes the bound values of a statement from a database error, in place, so that logging it
 * never writes user data or secrets (a new API key's hash, a password digest) to the logs. The
 * SQL driver prefixes its message with the statement, values inlined (`insert into ... - SQLITE_...`);
 * what remains is the driver's own message with quoted values masked, and the codes (`code`,
 * `sqlState`, `constraint`, `table`) that say what failed. Idempotent; other errors are left alone.
 */
export function scrubDatabaseError(error: unknown): void {
  if (!isDatabaseError(error) || scrubbed.has(error)) return;
  scrubbed.add(error);
  const record = error as unknown as Record<string, unknown>;
  const original = error.message;
  const cut = original.lastIndexOf(' - ');
  const driverMessage = (cut === -1 ? original : original.slice(cut + 3)).replace(quotedText, '…');
  error.message = driverMessage;
  const stackLines = (error.stack ?? '').split('\n').filter((line) => line.trim().startsWith('at '));
  error.stack = [`${error.name}: ${driverMessage}`, ...stackLines].join('\n');
  for (const key of ['sql', 'sqlMessage', 'detail', 'where', 'parameters', 'bindings', 'query']) {
    if (key in record) delete record[key];
  }
}

/** A MikroORM driver exception, or a driver error that reached us unconverted (raw `execute`). */
function isDatabaseError(error: unknown): error is Error {
  if (error instanceof DriverException) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  // node-sqlite3 codes, or a node-postgres DatabaseError (it carries severity and routine).
  return typeof code === 'string' && (code.startsWith('SQLITE_') || ('severity' in error && 'routine' in error));
}
