export * from './databases.js';
export * from './host.js';
export * from './kernel.js';
export * from './contract.js';
