export { aiModule } from './ai.module.js';
export { AiModel, AiModelSchema } from './entities/ai-model.entity.js';
export { AiTool, AiToolSchema, type AiToolAction } from './entities/ai-tool.entity.js';
