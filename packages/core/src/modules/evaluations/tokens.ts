import type { ServiceIdentifier } from 'inversify';
import type { EvaluationsConfig } from './evaluations.config.js';

export const evaluationsConfigServiceIdentifier: ServiceIdentifier<EvaluationsConfig> = Symbol.for('@trellis/core/EvaluationsConfig');
