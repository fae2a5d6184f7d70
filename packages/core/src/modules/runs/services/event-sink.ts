import type { RunEventRecord, RunEventText } from './event-text.js';

/** Where an executing run's events go. */
export interface RunEventSink {
  emit(type: string, data: Record<string, unknown>): number;
  /** `emit('block_chunk', { blockId, delta })`, the same event, without the object on the way. */
  emitChunk(blockId: string, delta: string): number;
  /**
   * `emitChunk` for each delta given as the text between the quotes of its JSON string (`a\nb`
   * for "a", a newline, "b"; see `splitJsonStrings`), in order: the events' text is written
   * around them, no delta is parsed or serialized. Answers the last event's number.
   */
  emitChunkBodies(blockId: string, bodies: readonly string[]): number;
  /**
   * Emits an event that readers see only once the next store of the log (a checkpoint or the
   * final record) committed: a client that saw it reads the state it announces.
   */
  emitStored(type: string, data: Record<string, unknown>): number;
  /** Resolves once every event emitted so far is stored. */
  flush(): Promise<void>;
  close(): Promise<void>;
  /**
   * Undefined while the sink keeps up; when more than `BACKLOG_EVENTS` events or
   * `BACKLOG_BYTES` of them wait to be stored (or read), a promise that resolves once half of that
   * is left. Producers that can wait (code blocks' emits, model streams, tool results) wait for
   * it before they produce more: what a run holds in memory stays bounded however fast it emits.
   */
  backlog(): Promise<void> | undefined;
}

/** Events a sink may hold unstored before its producers are held back (see `RunEventSink.backlog`). */
export const BACKLOG_EVENTS = 8_000;
/** Bytes (UTF-16 code units of the events' JSON) a sink may hold unstored before its producers are held back. */
export const BACKLOG_BYTES = 4 * 1024 * 1024;

/** The backlog of a sink: events and their size held, and the producers waiting for it to shrink. */
export class Backlog {
  events = 0;
  bytes = 0;
  private drained: { promise: Promise<void>; resolve: () => void } | null = null;

  add(events: number, bytes: number): void {
    this.events += events;
    this.bytes += bytes;
  }

  remove(events: number, bytes: number): void {
    this.events = Math.max(0, this.events - events);
    this.bytes = Math.max(0, this.bytes - bytes);
    if (this.drained && this.events <= BACKLOG_EVENTS / 2 && this.bytes <= BACKLOG_BYTES / 2) this.release();
  }

  /** Lets every waiting producer go (the backlog shrank, or the sink failed or stopped keeping events). */
  release(): void {
    const drained = this.drained;
    this.drained = null;
    drained?.resolve();
  }

  wait(): Promise<void> | undefined {
    if (this.events <= BACKLOG_EVENTS && this.bytes <= BACKLOG_BYTES) return undefined;
    if (!this.drained) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.drained = { promise, resolve };
    }
    return this.drained.promise;
  }
}

export const sizeOf = (events: readonly RunEventText[]): number => {
  let bytes = 0;
  for (const event of events) bytes += event.json.length;
  return bytes;
};


/** The sink of a debug run (content given in the request): events go to the request's stream only. */
export class LocalEventSink implements RunEventSink {
  private next = 1;
  private queue: (RunEventRecord & RunEventText)[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  /** Set when nobody will read the events (the run's caller asked for its result only, or its reader left): they are not kept. */
  private unread = false;
  /** Events in the queue, not yet taken by the reader. */
  private readonly queued = new Backlog();

  emit(type: string, data: Record<string, unknown>): number {
    const seq = this.next++;
    if (this.unread) return seq;
    const event = { seq, type, data, json: JSON.stringify(data) };
    this.queue.push(event);
    this.queued.add(1, event.json.length);
    this.wake?.();
    return seq;
  }

  backlog(): Promise<void> | undefined {
    return this.unread ? undefined : this.queued.wait();
  }

  /** Stops keeping events: nobody will read them (the queue is dropped and producers never wait). */
  discard(): void {
    this.unread = true;
    this.queue = [];
    this.queued.remove(this.queued.events, this.queued.bytes);
    this.queued.release();
  }

  emitChunk(blockId: string, delta: string): number {
    return this.emit('block_chunk', { blockId, delta });
  }

  emitChunkBodies(blockId: string, bodies: readonly string[]): number {
    let seq = this.next - 1;
    for (const body of bodies) seq = this.emitChunk(blockId, JSON.parse('"' + body + '"') as string);
    return seq;
  }

  /** Nothing is stored: the event goes out with the others. */
  emitStored(type: string, data: Record<string, unknown>): number {
    return this.emit(type, data);
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
  }

  /** The events in the batches they are taken in; a reader that stops early leaves the rest unkept. */
  async *batches(): AsyncGenerator<(RunEventRecord & RunEventText)[]> {
    try {
      for (;;) {
        if (this.queue.length) {
          const batch = this.queue;
          this.queue = [];
          this.queued.remove(batch.length, sizeOf(batch));
          yield batch;
        }
        if (this.queue.length) continue;
        if (this.closed) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
      }
    } finally {
      this.discard();
    }
  }
}
