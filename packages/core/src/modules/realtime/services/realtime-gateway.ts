import type { EntityManager, MikroORM } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Logger } from 'pino';
import { accessRevocationsServiceIdentifier, type AccessRevocations } from '../../../kernel/auth/access-revocation.js';
import { extractBearer, type Authenticator } from '../../../kernel/auth/authenticator.js';
import { requireScopes } from '../../../kernel/auth/scopes.js';
import type { Principal } from '../../../kernel/auth/principal.js';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Kernel } from '../../../kernel/kernel.js';
import type { RpcContext, RpcMethodDefinition } from '../../../kernel/module.js';
import {
  authenticatorServiceIdentifier,
  configServiceIdentifier,
  kernelServiceIdentifier,
  loggerServiceIdentifier,
  ormServiceIdentifier,
} from '../../../kernel/tokens.js';
import type { ChannelSession, ChannelUpgradeRequest, SocketLike } from '../../../kernel/ws/channel.js';
import { channelTargetResolverServiceIdentifier, type ChannelTarget, type ChannelTargetResolver } from '../channel-targets.js';
import { realtimeSection, type RealtimeConfig } from '../realtime.config.js';
import { RealtimeSession, type AcceptedConnection, type RealtimeSessionEnv, type RealtimeSessionInfo } from '../session/realtime-session.js';
import { channelKinds, type ChannelKind } from '../topics.js';
import { ConnectionRegistry } from './connection-registry.js';
import { PushHub } from './push-hub.js';
import { isUuid } from '../../../kernel/crypto.js';

const reservedMethods = new Set(['auth', 'ping']);

/**
 * Accepts or refuses upgrades to the realtime channels and builds the session of each socket:
 * `handleConnection(socket, accepted)` is all a transport binding calls (through the kernel's
 * channel table).
 *
 * At the upgrade the token (query `token`, or an `Authorization: Bearer` header) must be valid
 * (401 otherwise). On `/v3/wss/{id}` the id is looked up through the `ChannelTargetResolver` to
 * tell an application from a hardware device: 404 when it names neither, 503 when no resolver is
 * bound. Ownership is checked by the `auth` request (-32002).
 */
@injectable()
export class RealtimeGateway {
  private readonly config: RealtimeConfig;
  private env?: RealtimeSessionEnv;

  constructor(
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
    @inject(kernelServiceIdentifier) private readonly kernel: Kernel,
    @inject(ormServiceIdentifier) private readonly orm: MikroORM,
    @inject(PushHub) private readonly hub: PushHub,
    @inject(ConnectionRegistry) private readonly registry: ConnectionRegistry,
    @inject(configServiceIdentifier) config: TrellisConfig,
    @inject(loggerServiceIdentifier) private readonly log: Logger,
    @inject(accessRevocationsServiceIdentifier) private readonly revocations: AccessRevocations,
  ) {
    this.config = realtimeSection(config);
  }

  /** `/v3/wss`: the user channel of the token's user. */
  async acceptUser(request: ChannelUpgradeRequest): Promise<(socket: SocketLike) => ChannelSession> {
    const { principal, token } = await this.authenticateUpgrade(request);
    return (socket) => this.handleConnection(socket, { kind: 'user', targetId: principal.userId, principal, token });
  }

  /** `/v3/wss/{id}`: an application or a hardware device, told apart by looking the id up. */
  async acceptTarget(request: ChannelUpgradeRequest): Promise<(socket: SocketLike) => ChannelSession> {
    const { principal, token } = await this.authenticateUpgrade(request);
    const id = request.params['id'] ?? '';
    const target = await this.resolve(id);
    if (!target) throw new TrellisError('not_found', 'channel_target_not_found', 'No application or hardware device has this id.');
    return (socket) => this.handleConnection(socket, { kind: target.kind, targetId: target.id, principal, token });
  }

  /** Builds the session of one accepted socket. */
  handleConnection(socket: SocketLike, accepted: AcceptedConnection): RealtimeSession {
    return new RealtimeSession(socket, this.sessionEnv(), accepted).start();
  }

  /** Shared by every session: per-socket state stays in the session itself. */
  private sessionEnv(): RealtimeSessionEnv {
    return (this.env ??= {
      config: this.config,
      methods: buildMethodTables(this.kernel.rpcMethods),
      authenticate: async (token, ip) => this.allowScopes(await this.authenticator.authenticate(token, { ip, userAgent: '' })),
      resolveTarget: (id) => this.resolve(id),
      hub: this.hub,
      registry: this.registry,
      context: (session) => this.rpcContext(session),
      watch: (subject, watcher) => this.revocations.watch(subject, watcher),
      log: this.log.child({ module: 'realtime' }),
    });
  }

  private async authenticateUpgrade(request: ChannelUpgradeRequest): Promise<{ principal: Principal; token: string }> {
    const token = request.query.get('token') || extractBearer(request.headers);
    if (!token) {
      throw new TrellisError('unauthenticated', 'missing_credentials', 'Give a token in the token query parameter.', {
        headers: { 'www-authenticate': 'Bearer' },
      });
    }
    return { principal: this.allowScopes(await this.authenticator.authenticate(token, { ip: request.remoteAddress, userAgent: request.headers['user-agent'] ?? '' })), token };
  }

  /**
   * The channels carry everything a user receives, so a scoped credential (an OAuth access token,
   * a scoped API key) needs a full-access scope (`auth.fullAccessScopes`) to use them.
   */
  private allowScopes(principal: Principal): Principal {
    requireScopes(principal, [], this.kernel.config.auth.fullAccessScopes);
    return principal;
  }

  private async resolve(id: string): Promise<ChannelTarget | null> {
    // Ids are UUIDs; anything else names nothing (and must not reach a uuid column).
    if (!isUuid(id)) return null;
    const container = this.kernel.container;
    if (!container.isBound(channelTargetResolverServiceIdentifier)) {
      throw new TrellisError(
        'unavailable',
        'realtime_targets_unavailable',
        'Application and hardware channels need a ChannelTargetResolver; load the developer module (or bind your own).',
      );
    }
    const resolver: ChannelTargetResolver = container.get(channelTargetResolverServiceIdentifier);
    return resolver.resolve(this.orm.em.fork(), id);
  }

  /** One method call's context: `em` is forked when the method first reads it, not before. */
  private rpcContext(session: RealtimeSessionInfo): RpcContext & { session: RealtimeSessionInfo } {
    let em: EntityManager | undefined;
    const orm = this.orm;
    return {
      session,
      log: this.sessionEnv().log,
      get: (id) => this.kernel.get(id),
      get em() {
        return (em ??= orm.em.fork());
      },
    };
  }
}

/** Indexes the JSON-RPC methods modules declared, per channel kind; refuses reserved or duplicate names. */
export function buildMethodTables(definitions: readonly RpcMethodDefinition[]): ReadonlyMap<ChannelKind, ReadonlyMap<string, RpcMethodDefinition>> {
  const tables = new Map<ChannelKind, Map<string, RpcMethodDefinition>>(channelKinds.map((kind) => [kind, new Map()]));
  for (const definition of definitions) {
    if (reservedMethods.has(definition.method) || definition.method.startsWith('rpc.')) {
      throw new Error(`The JSON-RPC method name "${definition.method}" is reserved by the realtime channels.`);
    }
    for (const channel of definition.channels) {
      const table = tables.get(channel as ChannelKind);
      if (!table) continue; // a channel of another module
      if (table.has(definition.method)) throw new Error(`Two modules declare the JSON-RPC method "${definition.method}" on the ${channel} channel.`);
      table.set(definition.method, definition);
    }
  }
  return tables;
}
