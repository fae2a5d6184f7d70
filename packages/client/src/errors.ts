/** A Trellis error answer: the HTTP status and the body's `error` code and `message`. */
export class TrellisApiError extends Error {
  override readonly name = 'TrellisApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }

  /** Reads a failed response's body (JSON `{ error, message }` when Trellis wrote it). */
  static async from(response: Response): Promise<TrellisApiError> {
    const text = await response.text().catch(() => '');
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    const fields = (body && typeof body === 'object' ? body : {}) as { error?: unknown; message?: unknown };
    const code = typeof fields.error === 'string' ? fields.error : `http_${response.status}`;
    const message = typeof fields.message === 'string' ? fields.message : `HTTP ${response.status}`;
    return new TrellisApiError(response.status, code, message, body);
  }
}
