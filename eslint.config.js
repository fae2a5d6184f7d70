// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Only the published entry points of @trellis/core may be imported outside core. */
const coreInternals = {
  patterns: [
    { group: ['@trellis/core/*', '!@trellis/core/package.json'], message: 'Import from "@trellis/core" (its published entry point), not its internals.' },
    { group: ['**/core/src/**', '**/core/dist/**'], message: 'Import from "@trellis/core", not from its source or build folders.' },
  ],
};

/**
 * Core talks to the database through MikroORM's public API (`@mikro-orm/core`) and the Database
 * port: knex, the SQL drivers and the adapters' MikroORM internals stay in the adapters.
 */
const coreDatabaseBoundary = {
  patterns: [
    {
      group: ['knex', 'knex/*', 'pg', 'pg/*', 'sqlite3', 'better-sqlite3', '@mikro-orm/*', '!@mikro-orm/core', '@trellis/db-*'],
      message: 'Core uses @mikro-orm/core and the Database port only: put what needs knex, a driver or MikroORM internals in the database adapters (see docs/adapters.md, "Past MikroORM\'s public API").',
    },
  ],
};

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', 'packages/cli/templates/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', URL: 'readonly', fetch: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', AbortController: 'readonly', queueMicrotask: 'readonly', structuredClone: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-unsafe-function-type': 'off',
      '@typescript-eslint/no-empty-object-type': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['packages/adapters/**', 'packages/host/**', 'packages/cli/**', 'examples/**', 'bench/**'],
    rules: { 'no-restricted-imports': ['error', coreInternals] },
  },
  {
    files: ['packages/core/src/**'],
    ignores: ['packages/core/src/**/*.spec.ts'],
    rules: { 'no-restricted-imports': ['error', coreDatabaseBoundary] },
  },
);
