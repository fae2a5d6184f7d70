export * from './databases.js';
export * from './host.js';
export * from './kernel.js';
export * from './ai-wire/index.js';
