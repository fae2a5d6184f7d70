/** The three kinds of realtime channel, and so of push target. */
export type ChannelKind = 'user' | 'application' | 'hardware';

export const channelKinds: readonly ChannelKind[] = ['user', 'application', 'hardware'];

const topicPrefix: Record<ChannelKind, string> = { user: 'realtime:user:', application: 'realtime:app:', hardware: 'realtime:hd:' };

/** The PubSub topic that carries pushes to one user, application or hardware device. */
export function pushTopic(kind: ChannelKind, id: string): string {
  return `${topicPrefix[kind]}${id}`;
}

/** What travels through PubSub for one push: the JSON-RPC method and its params. */
export interface PushEnvelope {
  method: string;
  params: Record<string, unknown> | unknown[];
}

export function encodeEnvelope(envelope: PushEnvelope): string {
  return JSON.stringify(envelope);
}

/** Returns null for anything that is not an envelope (a foreign publisher on the topic). */
export function decodeEnvelope(message: string | Uint8Array): PushEnvelope | null {
  try {
    const text = typeof message === 'string' ? message : Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString('utf8');
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null) return null;
    const { method, params } = value as Record<string, unknown>;
    if (typeof method !== 'string' || typeof params !== 'object' || params === null) return null;
    return { method, params: params as PushEnvelope['params'] };
  } catch {
    return null;
  }
}
