import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import * as authProtocol from 'y-protocols/auth';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as syncProtocol from 'y-protocols/sync';
import * as Y from 'yjs';

/**
 * The y-websocket wire protocol: every message starts with a varUint type, then its payload.
 * `sync` carries the y-protocols sync messages (step 1: a state vector; step 2 and update: a Yjs
 * update), `awareness` an awareness update, `auth` a permission-denied reason, `queryAwareness`
 * asks for every awareness state.
 */
export const MessageType = { sync: 0, awareness: 1, auth: 2, queryAwareness: 3 } as const;

export const SyncType = { step1: syncProtocol.messageYjsSyncStep1, step2: syncProtocol.messageYjsSyncStep2, update: syncProtocol.messageYjsUpdate } as const;

export function syncStep1Message(doc: Y.Doc): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.sync);
  syncProtocol.writeSyncStep1(encoder, doc);
  return encoding.toUint8Array(encoder);
}

export function syncStep2Message(doc: Y.Doc, stateVector?: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.sync);
  syncProtocol.writeSyncStep2(encoder, doc, stateVector);
  return encoding.toUint8Array(encoder);
}

export function updateMessage(update: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.sync);
  syncProtocol.writeUpdate(encoder, update);
  return encoding.toUint8Array(encoder);
}

export function awarenessMessage(awareness: awarenessProtocol.Awareness, clients: number[]): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.awareness);
  encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(awareness, clients));
  return encoding.toUint8Array(encoder);
}

export function permissionDeniedMessage(reason: string): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarUint(encoder, MessageType.auth);
  authProtocol.writePermissionDenied(encoder, reason);
  return encoding.toUint8Array(encoder);
}

/** A decoded client message. */
export type ClientMessage =
  | { type: 'sync-step1'; stateVector: Uint8Array }
  | { type: 'sync-update'; update: Uint8Array }
  | { type: 'awareness'; update: Uint8Array }
  | { type: 'query-awareness' }
  | { type: 'unknown'; code: number };

/** Decodes a client message; throws on malformed bytes. */
export function decodeClientMessage(data: Uint8Array): ClientMessage {
  const decoder = decoding.createDecoder(data);
  const type = decoding.readVarUint(decoder);
  switch (type) {
    case MessageType.sync: {
      const sub = decoding.readVarUint(decoder);
      const payload = decoding.readVarUint8Array(decoder);
      if (sub === SyncType.step1) return { type: 'sync-step1', stateVector: payload };
      if (sub === SyncType.step2 || sub === SyncType.update) return { type: 'sync-update', update: payload };
      return { type: 'unknown', code: sub };
    }
    case MessageType.awareness:
      return { type: 'awareness', update: decoding.readVarUint8Array(decoder) };
    case MessageType.queryAwareness:
      return { type: 'query-awareness' };
    default:
      return { type: 'unknown', code: type };
  }
}

/** Whether a Yjs update carries nothing (a read-only client's empty sync step 2). */
export function isEmptyUpdate(update: Uint8Array): boolean {
  try {
    const decoded = Y.decodeUpdate(update);
    return decoded.structs.length === 0 && decoded.ds.clients.size === 0;
  } catch {
    return false;
  }
}

// Messages between host processes on the PubSub port: the sender's instance id, a kind, a payload.
export const PeerKind = { hello: 0, sync: 1, update: 2, awareness: 3 } as const;
export type PeerKindValue = (typeof PeerKind)[keyof typeof PeerKind];

export function peerMessage(instanceId: string, kind: PeerKindValue, payload: Uint8Array): Uint8Array {
  const encoder = encoding.createEncoder();
  encoding.writeVarString(encoder, instanceId);
  encoding.writeVarUint(encoder, kind);
  encoding.writeVarUint8Array(encoder, payload);
  return encoding.toUint8Array(encoder);
}

export function readPeerMessage(data: Uint8Array): { instanceId: string; kind: number; payload: Uint8Array } {
  const decoder = decoding.createDecoder(data);
  return { instanceId: decoding.readVarString(decoder), kind: decoding.readVarUint(decoder), payload: decoding.readVarUint8Array(decoder) };
}
