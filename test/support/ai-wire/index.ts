export * from './common.js';
export * from './openai.js';
export * from './conformance.js';
export * from './anthropic.js';
