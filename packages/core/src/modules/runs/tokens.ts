import type { ServiceIdentifier } from 'inversify';
import type { RunsConfig } from './runs.config.js';

export const runsConfigServiceIdentifier: ServiceIdentifier<RunsConfig> = Symbol.for('@trellis/core/runs/Config');
