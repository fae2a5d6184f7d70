/**
 * What a route handler may return instead of a plain value: a status, headers, a redirect or a
 * stream. A plain value is sent as JSON with the route's success status.
 */
export class Reply {
  private constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string>,
    readonly kind: 'json' | 'raw' | 'stream',
  ) {}

  static json(body: unknown, status = 200, headers: Record<string, string> = {}): Reply {
    return new Reply(status, body, headers, 'json');
  }

  static redirect(location: string, status = 302): Reply {
    return new Reply(status, null, { location }, 'raw');
  }

  static raw(body: string | Uint8Array, contentType: string, status = 200, headers: Record<string, string> = {}): Reply {
    return new Reply(status, body, { 'content-type': contentType, ...headers }, 'raw');
  }

  static empty(status = 204, headers: Record<string, string> = {}): Reply {
    return new Reply(status, null, headers, 'raw');
  }

  /** A stream written with back-pressure; it is stopped (`return()`) when the client goes away. */
  static stream(body: AsyncIterable<string | Uint8Array>, contentType: string, headers: Record<string, string> = {}): Reply {
    return new Reply(200, body, { 'content-type': contentType, 'cache-control': 'no-cache', ...headers }, 'stream');
  }

  /** Server-sent events from an async iterable of `{ event, data }`. */
  static sse(events: AsyncIterable<{ event?: string; data: unknown; id?: string }>): Reply {
    async function* encode() {
      for await (const item of events) {
        let frame = '';
        if (item.id !== undefined) frame += `id: ${item.id}\n`;
        if (item.event) frame += `event: ${item.event}\n`;
        frame += `data: ${typeof item.data === 'string' ? item.data : JSON.stringify(item.data)}\n\n`;
        yield frame;
      }
    }
    return Reply.stream(encode(), 'text/event-stream; charset=utf-8', { 'x-accel-buffering': 'no' });
  }

  /** Newline-delimited JSON from an async iterable of objects. */
  static ndjson(items: AsyncIterable<unknown>): Reply {
    async function* encode() {
      for await (const item of items) yield `${JSON.stringify(item)}\n`;
    }
    return Reply.stream(encode(), 'application/x-ndjson');
  }
}
