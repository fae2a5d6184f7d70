export * from './databases.js';
export * from './kernel.js';
