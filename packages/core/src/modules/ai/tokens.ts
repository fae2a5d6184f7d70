import type { ServiceIdentifier } from 'inversify';
import type { AiConfig } from './ai.config.js';
import type { SecretBox } from './services/secret-box.js';

export const aiConfigServiceIdentifier: ServiceIdentifier<AiConfig> = Symbol.for('@trellis/core/AiConfig');
export const secretBoxServiceIdentifier: ServiceIdentifier<SecretBox> = Symbol.for('@trellis/core/AiSecretBox');
