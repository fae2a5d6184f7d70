import { describe, expect, it } from 'vitest';
import { httpStatusByKind, rpcCodeByKind, toTrellisError, TrellisError, type ErrorKind } from './errors.js';

describe('TrellisError', () => {
  it('maps every kind to an HTTP status and a JSON-RPC code', () => {
    for (const kind of Object.keys(httpStatusByKind) as ErrorKind[]) {
      const error = new TrellisError(kind, 'x', 'y');
      expect(error.status).toBe(httpStatusByKind[kind]);
      expect(error.rpcCode).toBe(rpcCodeByKind[kind]);
    }
    expect(new TrellisError('unauthenticated', 'x', 'y').rpcCode).toBe(-32001);
    expect(new TrellisError('forbidden', 'x', 'y').rpcCode).toBe(-32002);
  });

  it('lets an area override the status of a kind', () => {
    expect(new TrellisError('validation', 'BAD_REQUEST', 'm', { status: 400 }).status).toBe(400);
  });

  it('hides the message of internal errors and wraps unknown throwables', () => {
    const wrapped = toTrellisError(new Error('SELECT * FROM secrets failed'));
    expect(wrapped.kind).toBe('internal');
    expect(wrapped.code).toBe('internal_error');
    expect(wrapped.exposed).toBe(false);
    expect(wrapped.message).not.toContain('SELECT');
    expect((wrapped.cause as Error).message).toContain('SELECT');
    expect(new TrellisError('conflict', 'c', 'm').exposed).toBe(true);
  });
});

describe('database errors', () => {
  it('become 4xx answers that reveal no SQL', async () => {
    const { UniqueConstraintViolationException, ForeignKeyConstraintViolationException, NotNullConstraintViolationException, DriverException } = await import('@mikro-orm/core');
    const raw = (message: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(message), extra);
    const unique = toTrellisError(new UniqueConstraintViolationException(raw('duplicate key value violates unique constraint "users_email_unique"')));
    expect([unique.status, unique.code]).toEqual([409, 'already_exists']);
    expect(unique.message).not.toContain('users_email_unique');
    expect(toTrellisError(new ForeignKeyConstraintViolationException(raw('fk'))).status).toBe(409);
    expect(toTrellisError(new NotNullConstraintViolationException(raw('null'))).status).toBe(422);
    const tooLong = new DriverException(raw('value too long for type character varying(200)'));
    tooLong.code = '22001';
    expect([toTrellisError(tooLong).status, toTrellisError(tooLong).code]).toEqual([422, 'invalid_value']);
    const other = new DriverException(raw('connection reset'));
    expect(toTrellisError(other).status).toBe(500);
  });
});
