export * from './common.js';
export * from './openai.js';
