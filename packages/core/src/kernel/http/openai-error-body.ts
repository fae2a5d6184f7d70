import type { TrellisError } from '../errors.js';

/** OpenAI's error `type` for each HTTP status its clients tell apart. */
const typeByStatus: Record<number, string> = {
  401: 'authentication_error',
  402: 'insufficient_quota',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  429: 'rate_limit_error',
};

/**
 * The error body of an OpenAI-compatible route: `{ error: { message, type, code, param } }`, the
 * shape the OpenAI SDKs read. `code` is the Trellis code; `param` names the first invalid field.
 */
export function openAiErrorBody(error: TrellisError, message: string): Record<string, unknown> {
  const status = error.status;
  const type = typeByStatus[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
  const param = error.details?.[0]?.field ?? null;
  return { error: { message, type, code: error.code, param } };
}
