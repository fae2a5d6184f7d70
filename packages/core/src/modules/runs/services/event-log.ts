/**
 * A run's event log: the text form of its events (`event-text.ts`), the sinks an executing run
 * emits into (`event-sink.ts`, `stored-event-sink.ts`), and the readers that follow it
 * (`follow.ts`).
 */
export { eventData, parseEventLine, parseEventMessage, runControlTopic, runEventsTopic, typeJson, type RunEventRecord, type RunEventText } from './event-text.js';
export { BACKLOG_BYTES, BACKLOG_EVENTS, LocalEventSink, type RunEventSink } from './event-sink.js';
export { ROW_EVENTS, SEQ_BLOCK, StoredEventSink } from './stored-event-sink.js';
export { followRun, followRunBatches, LIVE_EVENTS, type FollowOptions } from './follow.js';
