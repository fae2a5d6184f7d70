export { openAiCompatModule } from './openai-compat.module.js';
