import type { EntityManager } from '@mikro-orm/core';
import type { ContainerModule, ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import type { EntityDefinition, MigrationDefinition } from '../ports/database.js';
import type { TrellisConfig } from './config/config.js';
import type { ObjectNode, Shape } from './config/schema.js';
import type { ClassType, RouteDefinition } from './http/route.js';
import type { ChannelDefinition } from './ws/channel.js';
import type { Hooks } from './hooks.js';

export interface ModuleContext {
  /** The whole validated configuration. */
  config: TrellisConfig;
  /** This module's own validated section (`config[module.name]`), or `{}`. */
  section: any;
  log: Logger;
  hooks: Hooks;
}

export interface JobContext {
  em: EntityManager;
  log: Logger;
  now: Date;
  signal: AbortSignal;
  get<T>(id: ServiceIdentifier<T>): T;
}

export interface JobDefinition {
  name: string;
  /** Milliseconds between runs (a run never overlaps the previous one in this process). */
  intervalMs: number | ((config: TrellisConfig) => number);
  run(ctx: JobContext): Promise<void>;
}

export interface RpcContext {
  log: Logger;
  get<T>(id: ServiceIdentifier<T>): T;
  /** A unit of work for this call (`em.fork()`), created on first use. */
  readonly em: EntityManager;
}

/**
 * A JSON-RPC method offered on one or more WebSocket channels. The realtime module's channels are
 * named `user`, `application` and `hardware`; its session is passed as `ctx.session`
 * (`RealtimeSessionInfo`). The handler's return value is the result; a thrown `TrellisError`
 * becomes the JSON-RPC error of its kind.
 */
export interface RpcMethodDefinition {
  channels: readonly string[];
  method: string;
  /** DTO class that validates `params` (a JSON object); a failure answers -32602 with `details`. */
  params?: ClassType;
  handler(params: unknown, ctx: RpcContext & { session: unknown }): unknown;
}

/**
 * One area of Trellis (identity, billing, oauth, documents, ...): everything it contributes,
 * declared in one place. Adding an area is adding a folder that exports one of these.
 */
export interface TrellisModule {
  name: string;
  /** Names of modules that must be loaded too. */
  dependsOn?: readonly string[];
  /** Schema of this module's configuration section, found at `config[name]`. */
  config?: ObjectNode<Shape>;
  entities?: readonly EntityDefinition[];
  /** Schema changes for this module's entities, per dialect (see `MigrationDefinition`). */
  migrations?: readonly MigrationDefinition[];
  /**
   * What this module's migrations write by hand and no entity describes (an FTS5 table and its
   * shadow tables, a generated search column): the schema generator leaves them out of its
   * comparison (MikroORM's `schemaGenerator.skipTables`), and `isSchemaExtra` tells the drift
   * check and `pnpm migration:create` which statements of a schema diff are about them.
   */
  schemaExtras?: { tables?: readonly (string | RegExp)[]; columns?: Readonly<Record<string, readonly string[]>>; indexes?: readonly string[] };
  /** Container bindings. Called once with the validated configuration. */
  container?(ctx: ModuleContext): ContainerModule;
  routes?: readonly RouteDefinition[] | ((ctx: ModuleContext) => readonly RouteDefinition[]);
  rpcMethods?: readonly RpcMethodDefinition[];
  /** WebSocket endpoints, or a function of the validated configuration that returns them. */
  channels?: readonly ChannelDefinition[] | ((ctx: ModuleContext) => readonly ChannelDefinition[]);
  jobs?: readonly JobDefinition[];
  /** Runs after the database is ready, before the kernel accepts requests. */
  onStart?(ctx: ModuleContext & { get<T>(id: ServiceIdentifier<T>): T }): Promise<void> | void;
  /** Runs when the kernel stops, after in-flight requests drained and sockets closed, before the database closes. */
  onStop?(ctx: ModuleContext & { get<T>(id: ServiceIdentifier<T>): T }): Promise<void> | void;
}

export function defineModule(module: TrellisModule): TrellisModule {
  return module;
}

const quotedName = (name: string) => `[\`"]${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\`"]`;

/**
 * Whether a statement of a schema diff only touches what a module's migrations write by hand
 * (`TrellisModule.schemaExtras`): the generator, which does not know them, would drop them.
 */
export function isSchemaExtra(statement: string, modules: readonly TrellisModule[]): boolean {
  for (const module of modules) {
    const extras = module.schemaExtras;
    if (!extras) continue;
    for (const index of extras.indexes ?? []) if (new RegExp(`^(drop|create) index (if exists )?${quotedName(index)}`, 'i').test(statement.trim())) return true;
    for (const [table, columns] of Object.entries(extras.columns ?? {})) {
      for (const column of columns) if (new RegExp(`^alter table ${quotedName(table)} (drop|add) column ${quotedName(column)}`, 'i').test(statement.trim())) return true;
    }
  }
  return false;
}
