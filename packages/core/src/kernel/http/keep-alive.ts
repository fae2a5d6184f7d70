/** What a stream sends after `intervalMs` of silence, by content type; none for other streams. */
export function keepAliveFrame(contentType: string | undefined): string | null {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  // An SSE comment line: EventSource clients skip it.
  if (type === 'text/event-stream') return ': keep-alive\n\n';
  // A line of its own type, with no sequence number: NDJSON readers skip types they do not know.
  if (type === 'application/x-ndjson') return '{"type":"ping"}\n';
  return null;
}

/**
 * `body`, with `frame` sent whenever it stays silent for `intervalMs`, so proxies and load
 * balancers that cut idle connections keep a long stream open (a model call that thinks for a
 * minute before its first token). The body is read one step at a time as before; a step still
 * pending when a keep-alive goes out is awaited by the next read, never asked for twice.
 */
export function withKeepAlive<T extends string | Uint8Array>(body: AsyncIterable<T>, intervalMs: number, frame: T): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const inner = body[Symbol.asyncIterator]();
      let pending: Promise<IteratorResult<T>> | null = null;
      return {
        async next() {
          pending ??= inner.next();
          let timer: ReturnType<typeof setTimeout> | undefined;
          const silence = new Promise<null>((resolve) => (timer = setTimeout(resolve, intervalMs, null)));
          try {
            const step = await Promise.race([pending, silence]);
            if (step === null) return { done: false, value: frame };
            pending = null;
            return step;
          } catch (error) {
            pending = null;
            throw error;
          } finally {
            clearTimeout(timer);
          }
        },
        async return(value?: unknown) {
          const reading = pending;
          pending = null;
          if (reading) {
            // A read still pending (a keep-alive went out meanwhile): the body's generator closes
            // once that read settles; the caller need not wait for it, nor hear of its failure.
            reading.catch(() => undefined);
            void Promise.resolve(inner.return?.(value)).catch(() => undefined);
            return { done: true, value: undefined };
          }
          return (await inner.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}
