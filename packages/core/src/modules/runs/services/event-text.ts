import { randomUUID } from 'node:crypto';
import type { StoredRunEvent } from '../entities/run-event.entity.js';
import { sqlRowTable, sqlStatement } from '../../../ports/database.js';
import type { PubSub } from '../../../ports/pubsub.js';

/** One event of a run's stream: the spec's event name as `type`, its fields as `data`. */
export type RunEventRecord = StoredRunEvent;

/**
 * An event as the stream writers take it: its fields as JSON text (`json`), serialized once where
 * the event was emitted and never parsed on its way to the client. `data` is there when the
 * event was at hand as an object anyway (debug runs).
 */
export interface RunEventText {
  seq: number;
  type: string;
  json: string;
  data?: Record<string, unknown>;
  /**
   * Set on a chunk the sink made (`{"blockId":..,"delta":".."}`): the start of `json` before the
   * delta's text, one string for every chunk of a block. The log keeps such chunks compact (`rowText`).
   */
  chunk?: string;
}

/** The fields of a streamed event as an object (parsed from its text when it has no object). */
export const eventData = (event: RunEventText): Record<string, unknown> => event.data ?? (JSON.parse(event.json) as Record<string, unknown>);

/**
 * The log's statements (prepared once per connection). A row holds the JSON array of its events
 * as written by the sink (`[{"seq":..,"type":..,"data":{..}},..]`), so storing a batch costs one
 * string join, not a serialization of every event. Rows go after the runs they belong to.
 */
export const eventRows = sqlRowTable('runs.event_log_insert', '"run_events" ("run_id", "seq", "last_seq", "events", "created_at")', '(?, ?, ?, ?, ?)', 4);
export const selectEventRows = sqlStatement(
  'runs.event_log_after',
  'select "seq", "last_seq", "events" from "run_events" where "run_id" = ? and "last_seq" > ? order by "seq" limit 20',
);
export const selectEventRowsBelow = sqlStatement(
  'runs.event_log_between',
  'select "seq", "last_seq", "events" from "run_events" where "run_id" = ? and "last_seq" > ? and "seq" < ? order by "seq" limit 20',
);

/**
 * The first line of a PubSub message of run events (the event lines follow, one JSON object
 * each): `{"format":"run-events","version":2,"from":"<tap id>"}`.
 */
export const headerOf = (from: string) => `{"format":"run-events","version":2,"from":${JSON.stringify(from)}}`;

/**
 * The sinks and readers of one PubSub instance in this process: a sink hands its events to the
 * readers of its run here directly (no message to parse), and those readers skip the PubSub
 * messages of this tap (`from` in the header). Readers of other processes, or of another PubSub
 * instance of this process, get the messages.
 */
export interface Tap {
  id: string;
  readers: Map<string, Set<(events: readonly RunEventText[]) => void>>;
  /** The head of each run whose sink is open in this process (see `SinkHead`), by run id. */
  heads: Map<string, SinkHead>;
}

/**
 * What an open sink of this process has published of a run so far, while that is little: a
 * reader that attaches takes these from memory and everything after from the tap, with no read of
 * the log (a stream's first bytes then wait for no statement).
 */
export interface SinkHead {
  /** The sink's first sequence number: the events before it (earlier attempts) are in the log only. */
  readonly start: number;
  /** The events it published, in order; null once more than `HEAD_EVENTS` were (then readers read the log). */
  readonly events: readonly RunEventText[] | null;
}

/** Events a sink keeps as its head (see `SinkHead`). */
export const HEAD_EVENTS = 1_000;

const taps = new WeakMap<PubSub, Tap>();

export function tapOf(pubsub: PubSub): Tap {
  let tap = taps.get(pubsub);
  if (!tap) taps.set(pubsub, (tap = { id: randomUUID(), readers: new Map(), heads: new Map() }));
  return tap;
}

/** Whether a PubSub message came from a sink of this tap (read from its header line only). */
export function fromTap(message: Uint8Array | string, tap: Tap): boolean {
  const text = typeof message === 'string' ? message : Buffer.from(message.buffer, message.byteOffset, Math.min(message.byteLength, 200)).toString('latin1');
  const end = text.indexOf('\n');
  return end > 0 && end < 200 && text.slice(0, end) === headerOf(tap.id);
}

/**
 * A text made from an event type, made once per type: `make` runs for the first event of each.
 * Event types are a handful of names; past 256 of them the rest are made each time, not kept.
 */
export function perType(make: (type: string) => string): (type: string) => string {
  const made = new Map<string, string>();
  return (type) => {
    let text = made.get(type);
    if (text === undefined) {
      text = make(type);
      if (made.size < 256) made.set(type, text);
    }
    return text;
  };
}

/** An event type as JSON text (`"block_chunk"`). */
export const typeJson = perType((type) => JSON.stringify(type));

/** `,"type":"block_chunk","data":`: the middle of an event line. */
export const typeField = perType((type) => ',"type":' + typeJson(type) + ',"data":');

/** `{"seq":1,"type":"block_chunk","data":{...}}`: an event as one JSON text, in the log and on PubSub. */
export const lineOf = (seq: number, type: string, json: string) => '{"seq":' + seq + typeField(type) + json + '}';

/** `{"blockId":`, the start of a chunk's text, and `,"delta":`, the part before its delta's text. */
const CHUNK_HEAD = 11;
const CHUNK_TAIL = 9;

/**
 * The `events` column of a row: a JSON array of the events of `events[from..to)`. An event is its
 * line (`{"seq":..,"type":..,"data":{..}}`), except the chunks the sink made (`chunk` set): chunks
 * of one block with consecutive numbers are one array, `["c",<first seq>,<block id>,<delta>,..]`.
 * A chunk of a few characters then costs its delta and a comma instead of a line ten times that
 * long: less text for the driver to encode and bind, for the database to write and for the
 * commit to sync. `rowEvents` reads both forms (rows written before compact chunks are lines only).
 */
export function rowText(events: readonly RunEventText[], from: number, to: number): string {
  // Built with `+=`: measured against joining an array of the parts (one flat string the driver
  // need not flatten), the rope costs less, flattening included.
  let text = '[';
  let i = from;
  while (i < to) {
    const event = events[i]!;
    if (i > from) text += ',';
    const chunk = event.chunk;
    if (chunk === undefined) {
      text += '{"seq":' + event.seq + typeField(event.type) + event.json + '}';
      i++;
      continue;
    }
    text += '["c",' + event.seq + ',' + chunk.slice(CHUNK_HEAD, -CHUNK_TAIL) + ',' + event.json.slice(chunk.length, -1);
    let seq = event.seq;
    for (i++; i < to; i++) {
      const next = events[i]!;
      if (next.chunk !== chunk || next.seq !== seq + 1) break;
      seq++;
      text += ',' + next.json.slice(chunk.length, -1);
    }
    text += ']';
  }
  return text + ']';
}

/** A row's item: an event, or consecutive chunks of one block (`["c",<first seq>,<block id>,<delta>,..]`, see `rowText`). */
type RowItem = StoredRunEvent | ['c', number, string, ...string[]];

/** The events of a row's items, the compact chunks spread (each `{ blockId, delta }`, as the sink made it). */
function spreadRow(items: RowItem[]): StoredRunEvent[] {
  if (!items.some((item) => Array.isArray(item))) return items as StoredRunEvent[];
  const events: StoredRunEvent[] = [];
  for (const item of items) {
    if (!Array.isArray(item)) {
      events.push(item);
      continue;
    }
    const [, first, blockId] = item;
    for (let k = 3; k < item.length; k++) events.push({ seq: first + k - 3, type: 'block_chunk', data: { blockId, delta: item[k] } });
  }
  return events;
}

/**
 * The strings of a JSON array of strings as `JSON.stringify` writes it (`["a","b\n"]`, no
 * whitespace: a sandbox's batch of emits), without parsing them: the text between the quotes of
 * each (`a`, `b\n`), and the UTF-8 bytes of their values together. Null when `json` does not
 * have that form.
 *
 * Inside a string of such a text a quote is always escaped (`\"`), so `","` is the text between
 * two strings unless its first quote is escaped (a string that ends in `",`): preceded by an odd
 * number of backslashes. Its bytes differ from the values' only by the brackets, quotes and commas, and by
 * escapes: `\n` (two characters for one byte), `\u001f` (six for one), `\ud800` (six for the
 * three bytes of U+FFFD that a lone surrogate becomes in UTF-8). A text with anything but strings
 * in its array (`["a",null,"b"]`: a quote left unescaped inside a string) answers null.
 */
export function splitJsonStrings(json: string): { bodies: string[]; bytes: number } | null {
  if (json.length < 4 || json.charCodeAt(0) !== 0x5b || json.charCodeAt(1) !== 0x22 || !json.endsWith('"]')) return null;
  const first = json.indexOf('\\');
  const inner = json.slice(2, -2);
  // Without a backslash no quote is escaped: every `","` is between two strings, and a quote
  // left inside a string means the array holds something else (`["a",1,"b"]`).
  const bodies = first === -1 ? inner.split('","') : splitAtUnescaped(inner);
  for (const body of bodies) if (body.indexOf('"') !== -1 && (first === -1 || !quotesEscaped(body))) return null;
  let bytes = Buffer.byteLength(json) - 3 * bodies.length - 1;
  for (let at = first; at !== -1; at = json.indexOf('\\', at + 2)) {
    if (json.charCodeAt(at + 1) !== 0x75) {
      bytes -= 1;
      continue;
    }
    const unit = Number.parseInt(json.slice(at + 2, at + 6), 16);
    const low = unit >= 0xd800 && unit < 0xdc00 && json.startsWith('\\u', at + 6) ? Number.parseInt(json.slice(at + 8, at + 12), 16) : 0;
    if (low >= 0xdc00 && low < 0xe000) {
      // An escaped surrogate pair: twelve characters for a character of four bytes.
      bytes -= 8;
      at += 10;
    } else {
      bytes -= 6 - (unit < 0x80 ? 1 : unit < 0x800 ? 2 : 3);
      at += 4;
    }
  }
  return { bodies, bytes };
}

/** Whether every quote of `body` is escaped (after an odd number of backslashes). */
function quotesEscaped(body: string): boolean {
  for (let at = body.indexOf('"'); at !== -1; at = body.indexOf('"', at + 1)) {
    let slashes = 0;
    while (at - 1 - slashes >= 0 && body.charCodeAt(at - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return false;
  }
  return true;
}

/** `inner.split('","')`, but not at a `","` whose first quote is escaped (after an odd number of backslashes). */
function splitAtUnescaped(inner: string): string[] {
  const bodies: string[] = [];
  let start = 0;
  for (let at = inner.indexOf('","'); at !== -1; at = inner.indexOf('","', at + 1)) {
    let slashes = 0;
    while (at - 1 - slashes >= start && inner.charCodeAt(at - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 1) continue;
    bodies.push(inner.slice(start, at));
    start = at + 3;
    at = start - 1;
  }
  bodies.push(inner.slice(start));
  return bodies;
}

/** Reads an event line back without parsing its fields (any other JSON object of the same meaning is parsed). */
export function parseEventLine(line: string): RunEventText {
  if (line.startsWith('{"seq":')) {
    const comma = line.indexOf(',', 7);
    const seq = Number(line.slice(7, comma));
    if (comma > 7 && Number.isSafeInteger(seq) && line.startsWith(',"type":"', comma)) {
      const typeEnd = line.indexOf('"', comma + 9);
      const type = line.slice(comma + 9, typeEnd);
      if (typeEnd > 0 && !type.includes('\\') && line.startsWith(',"data":{', typeEnd + 1) && line.endsWith('}}')) {
        return { seq, type, json: line.slice(typeEnd + 9, -1) };
      }
    }
  }
  return textOf(JSON.parse(line) as StoredRunEvent);
}

export const textOf = (event: StoredRunEvent): RunEventText => ({ seq: event.seq, type: event.type, json: JSON.stringify(event.data ?? {}) });

/**
 * The events of a PubSub message of a run's topic: the current form (a header line, then one
 * event line each) or, from a process of an earlier version during a rolling upgrade, a JSON
 * array of `{ seq, type, data }`.
 */
export function parseEventMessage(message: Uint8Array | string): RunEventText[] {
  const text = typeof message === 'string' ? message : Buffer.from(message).toString('utf8');
  if (text.startsWith('[')) return (JSON.parse(text) as StoredRunEvent[]).map(textOf);
  const out: RunEventText[] = [];
  let start = text.indexOf('\n') + 1;
  if (start === 0) return out;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    if (end > start) out.push(parseEventLine(text.slice(start, end)));
    start = end + 1;
  }
  return out;
}

/** The events of a row of the log (its `events` column: JSON text on SQLite, parsed by the driver on PostgreSQL). */
export function rowEvents(value: unknown): StoredRunEvent[] {
  if (typeof value === 'string') return spreadRow(JSON.parse(value) as RowItem[]);
  if (value instanceof Uint8Array) return spreadRow(JSON.parse(Buffer.from(value).toString('utf8')) as RowItem[]);
  return spreadRow(value as RowItem[]);
}

export const runEventsTopic = (runId: string) => `runs:events:${runId}`;
/** The topic a cancel of one run was published on by versions before `RunControlChannel` (still published, for them). */
export const runControlTopic = (runId: string) => `runs:control:${runId}`;
