import { inject, injectable } from 'inversify';
import { TrellisError } from '../../kernel/errors.js';
import { configServiceIdentifier } from '../../kernel/tokens.js';
import type { TrellisConfig } from '../../kernel/config/config.js';
import { pubSubServiceIdentifier, type PubSub } from '../../ports/pubsub.js';
import { realtimeSection } from './realtime.config.js';
import { encodeEnvelope, pushTopic, type ChannelKind } from './topics.js';

/** Method names a push may not use: the session's own requests and notices. */
const reservedMethods = new Set(['auth', 'ping', 'resync_required']);
const methodShape = /^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/;

/**
 * The push API: sends a JSON-RPC notification to every socket of one user (`/v3/wss`), one
 * application or one hardware device (`/v3/wss/{id}`), in every host process.
 *
 * ```ts
 * await ctx.get(PushService).toUser(userId, 'system', { type: 'notice', content: 'Maintenance at 22:00' });
 * await ctx.get(PushService).toApplication(appId, 'task', { taskId, status: 'done', result: { success: true, data } });
 * await ctx.get(PushService).toDevice(hdId, 'control', { command: 'reset', target: 'device', params: { mode: 'soft' } });
 * ```
 *
 * The spec's server-to-client methods are `system`, `conversation`, `status` (user), `event`,
 * `task`, `resource` (application) and `control` (hardware); modules may push other methods.
 * Delivery goes through the PubSub port (in-process by default, `@trellis/pubsub-redis` across
 * processes): the promise resolves once the backend accepted the message, whether or not a socket
 * is connected. Each receiving process numbers the pushes of a target (`seq`) and keeps a bounded
 * buffer of them so reconnecting clients can catch up (see docs/http/websocket.md).
 *
 * Throws `invalid_push` (a bad id, a reserved or malformed method, params that are not a plain JSON
 * object, or that contain `seq`) and `push_too_large` (above `realtime.maxPushBytes`).
 */
@injectable()
export class PushService {
  private readonly maxBytes: number;

  constructor(
    @inject(pubSubServiceIdentifier) private readonly pubsub: PubSub,
    @inject(configServiceIdentifier) config: TrellisConfig,
  ) {
    this.maxBytes = realtimeSection(config).maxPushBytes;
  }

  /** To every user-channel socket of this user. */
  toUser(userId: string, method: string, params: object): Promise<void> {
    return this.publish('user', userId, method, params);
  }

  /** To every socket of this application (`/v3/wss/{appId}`). */
  toApplication(appId: string, method: string, params: object): Promise<void> {
    return this.publish('application', appId, method, params);
  }

  /** To every socket of this hardware device (`/v3/wss/{hdId}`). */
  toDevice(hdId: string, method: string, params: object): Promise<void> {
    return this.publish('hardware', hdId, method, params);
  }

  private async publish(kind: ChannelKind, id: string, method: string, params: object): Promise<void> {
    if (typeof id !== 'string' || id.length === 0 || id.length > 128) {
      throw new TrellisError('bad_request', 'invalid_push', `A push needs the id of its ${kind === 'user' ? 'user' : kind === 'application' ? 'application' : 'device'}.`);
    }
    if (typeof method !== 'string' || !methodShape.test(method) || reservedMethods.has(method) || method.startsWith('rpc.')) {
      throw new TrellisError('bad_request', 'invalid_push', `"${String(method)}" cannot be pushed: use a method name of letters, digits and _.:- that is not reserved.`);
    }
    if (typeof params !== 'object' || params === null || Array.isArray(params) || (Object.getPrototypeOf(params) !== Object.prototype && Object.getPrototypeOf(params) !== null)) {
      throw new TrellisError('bad_request', 'invalid_push', 'Push params must be a plain JSON object.');
    }
    if ('seq' in params) {
      throw new TrellisError('bad_request', 'invalid_push', 'Push params may not contain "seq": the receiving process numbers every push.');
    }
    let message: string;
    try {
      message = encodeEnvelope({ method, params: params as Record<string, unknown> });
    } catch (cause) {
      throw new TrellisError('bad_request', 'invalid_push', 'Push params must be serialisable as JSON.', { cause });
    }
    if (Buffer.byteLength(message) > this.maxBytes) {
      throw new TrellisError('payload_too_large', 'push_too_large', `The push exceeds realtime.maxPushBytes (${this.maxBytes} bytes).`);
    }
    await this.pubsub.publish(pushTopic(kind, id), message);
  }
}
