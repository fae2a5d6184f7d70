import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';
import type { Logger } from 'pino';
import type { Authenticator } from './auth/authenticator.js';
import type { TrellisConfig } from './config/config.js';
import type { Hooks } from './hooks.js';
import type { Kernel } from './kernel.js';

export const configServiceIdentifier: ServiceIdentifier<TrellisConfig> = Symbol.for('@trellis/core/Config');
export const loggerServiceIdentifier: ServiceIdentifier<Logger> = Symbol.for('@trellis/core/Logger');
export const hooksServiceIdentifier: ServiceIdentifier<Hooks> = Symbol.for('@trellis/core/Hooks');
export const ormServiceIdentifier: ServiceIdentifier<MikroORM> = Symbol.for('@trellis/core/MikroORM');
/** The root EntityManager. Fork it (`em.fork()`) for every unit of work. */
export const entityManagerServiceIdentifier: ServiceIdentifier<EntityManager> = Symbol.for('@trellis/core/EntityManager');
export const authenticatorServiceIdentifier: ServiceIdentifier<Authenticator> = Symbol.for('@trellis/core/Authenticator');
export const kernelServiceIdentifier: ServiceIdentifier<Kernel> = Symbol.for('@trellis/core/Kernel');
