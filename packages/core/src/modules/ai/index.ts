export { aiModule } from './ai.module.js';
export { AiModel, AiModelSchema } from './entities/ai-model.entity.js';
export { AiTool, AiToolSchema, type AiToolAction } from './entities/ai-tool.entity.js';
export { AiModelService } from './services/ai-model.service.js';
export { AiToolService } from './services/ai-tool.service.js';
export { AiGatewayService, priceOf } from './services/ai-gateway.service.js';
export { SecretBox, SECRET_MASK } from './services/secret-box.js';
export { maskConf, isSecretKey } from './services/secret-fields.js';
export { aiConfigSchema, type AiConfig } from './ai.config.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { ModelCallReader, modelCallPageSchema, toModelCallView } from './services/model-call-reader.js';
export { modelCallFrame } from './services/model-call-scope.js';
export type { ModelCallFrame } from './services/model-call-scope.js';
export { runModelTurn } from './services/model-turn.js';
export type { ModelCallCredits, ModelStep } from './services/model-turn.js';
export { aiConfigServiceIdentifier, secretBoxServiceIdentifier } from './tokens.js';
export { maskActions } from './views.js';
