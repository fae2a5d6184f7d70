import { TrellisError } from '../../../kernel/errors.js';

/** JSON-RPC 2.0 error codes used on the realtime channels. */
export const rpcCodes = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /** The spec's "authentication failed" (user, application or hardware variant). */
  authenticationFailed: -32001,
  /** The spec's "insufficient permission". */
  insufficientPermission: -32002,
} as const;

export type RpcId = string | number | null;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/** A validated request or notification. */
export interface RpcRequest {
  method: string;
  params: unknown;
  /** Absent for a notification (which gets no reply). */
  id?: RpcId;
  notification: boolean;
}

export type RpcResponse = { jsonrpc: '2.0'; id: RpcId; result: unknown } | { jsonrpc: '2.0'; id: RpcId; error: RpcErrorObject };

/** An error that is already in JSON-RPC terms. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }

  toObject(): RpcErrorObject {
    return this.data ? { code: this.code, message: this.message, data: this.data } : { code: this.code, message: this.message };
  }
}

const isId = (value: unknown): value is RpcId =>
  value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));

/**
 * Checks one element of a message against JSON-RPC 2.0's Request object. Returns the request, or
 * the -32600 error to answer (with the request's id when that id itself is usable).
 */
export function parseRequest(value: unknown): RpcRequest | { invalid: RpcResponse } {
  const fail = (id: RpcId, why: string) => ({
    invalid: { jsonrpc: '2.0' as const, id, error: { code: rpcCodes.invalidRequest, message: `Invalid Request: ${why}`, data: { error: 'invalid_request' } } },
  });
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(null, 'expected a JSON object');
  const message = value as Record<string, unknown>;
  const hasId = 'id' in message;
  const id = hasId && isId(message.id) ? message.id : null;
  if (hasId && !isId(message.id)) return fail(null, 'id must be a string, a number or null');
  if (message.jsonrpc !== '2.0') return fail(id, 'jsonrpc must be "2.0"');
  if (typeof message.method !== 'string' || message.method.length === 0) return fail(id, 'method must be a non-empty string');
  if ('params' in message && (typeof message.params !== 'object' || message.params === null)) return fail(id, 'params must be an object or an array');
  if ('result' in message || 'error' in message) return fail(id, 'a client sends requests, not responses');
  return hasId ? { method: message.method, params: message.params, id, notification: false } : { method: message.method, params: message.params, notification: true };
}

/** Turns anything a method threw into a JSON-RPC error object; unexpected errors reveal nothing. */
export function toRpcError(thrown: unknown): { error: RpcErrorObject; unexpected: boolean } {
  if (thrown instanceof RpcError) return { error: thrown.toObject(), unexpected: false };
  // Deliberate failures (`unavailable`, `not_implemented`) say what is wrong; only `internal` hides.
  if (thrown instanceof TrellisError && thrown.kind !== 'internal') {
    const data: Record<string, unknown> = { error: thrown.code };
    if (thrown.details) data.details = thrown.details;
    if (thrown.extra) Object.assign(data, thrown.extra);
    return { error: { code: thrown.rpcCode, message: thrown.message, data }, unexpected: false };
  }
  return { error: { code: rpcCodes.internalError, message: 'Internal error', data: { error: 'internal_error' } }, unexpected: true };
}

export const parseErrorResponse = (): RpcResponse => ({
  jsonrpc: '2.0',
  id: null,
  error: { code: rpcCodes.parseError, message: 'Parse error: the message is not valid JSON', data: { error: 'parse_error' } },
});
