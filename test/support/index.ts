export * from './databases.js';
export * from './host.js';
export * from './kernel.js';
export * from './run-queue-contract.js';
export * from './ai-wire/index.js';
export * from './contract.js';
export * from './redis.js';
export * from './net.js';
