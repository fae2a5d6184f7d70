import { describe, expect, it } from 'vitest';
import { keepAliveFrame, withKeepAlive } from './keep-alive.js';

/** A body whose next part comes when the test says (`give`), counting the reads asked of it. */
function controlledBody() {
  const waiting: Array<(step: IteratorResult<string>) => void> = [];
  let reads = 0;
  let returned = false;
  const body: AsyncIterable<string> = {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        reads++;
        return new Promise<IteratorResult<string>>((resolve) => waiting.push(resolve));
      },
      return: async () => {
        returned = true;
        return { done: true, value: undefined };
      },
    }),
  };
  return {
    body,
    give: (value: string) => waiting.shift()!({ done: false, value }),
    end: () => waiting.shift()!({ done: true, value: undefined }),
    get reads() {
      return reads;
    },
    get returned() {
      return returned;
    },
  };
}

describe('withKeepAlive', () => {
  it('sends the frame while the body is silent, then the body\'s part, reading the body once per part', async () => {
    const source = controlledBody();
    const it = withKeepAlive(source.body, 5, ': keep-alive\n\n')[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ done: false, value: ': keep-alive\n\n' });
    expect(await it.next()).toEqual({ done: false, value: ': keep-alive\n\n' });
    expect(source.reads).toBe(1);
    const next = it.next();
    source.give('id: 1\n\n');
    expect(await next).toEqual({ done: false, value: 'id: 1\n\n' });
    const last = it.next();
    source.end();
    expect(await last).toEqual({ done: true, value: undefined });
    expect(source.reads).toBe(2);
  });

  it('a stop while a read is pending answers at once and closes the body', async () => {
    const source = controlledBody();
    const it = withKeepAlive(source.body, 5, 'ping\n')[Symbol.asyncIterator]();
    expect((await it.next()).value).toBe('ping\n');
    expect(await it.return!()).toEqual({ done: true, value: undefined });
    expect(source.returned).toBe(true);
  });

  it('frames by content type: SSE comment, NDJSON ping line, nothing for others', () => {
    expect(keepAliveFrame('text/event-stream; charset=utf-8')).toBe(': keep-alive\n\n');
    expect(keepAliveFrame('application/x-ndjson')).toBe('{"type":"ping"}\n');
    expect(keepAliveFrame('application/json')).toBeNull();
    expect(keepAliveFrame(undefined)).toBeNull();
  });
});
