import type { ServiceIdentifier } from 'inversify';
import type { TriggersConfig } from './triggers.config.js';

export const triggersConfigServiceIdentifier: ServiceIdentifier<TriggersConfig> = Symbol.for('@trellis/core/TriggersConfig');
