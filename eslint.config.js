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

/**
 * Module doors (docs/modules.md, "Doors"): a file of `packages/core/src/modules/<a>/` imports
 * another module only through its `index.ts`, and otherwise only its own files, the kernel, the
 * ports and the sandbox. The rule sees specifiers as written, so there is one pattern list per
 * folder depth: `(../){depth}` reaches `modules/`. Spec files are held to it too (they import
 * other modules' doors like any file). `pnpm doors` (scripts/module-doors.ts) rewrites imports
 * that break it.
 */
const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const doorPatterns = (depth) => {
  const up = escape('../'.repeat(depth));
  return [
    { regex: `^${up}[^./][^/]*/(?!index\\.js$)`, message: 'Import another module through its door, modules/<name>/index.js (docs/modules.md, "Doors"); `pnpm doors` rewrites such imports.' },
    { regex: `^${up}index\\.js$`, message: 'A module does not import the list of modules (modules/index.ts).' },
    { regex: `^${up}\\.\\./(index\\.js$|modules/)`, message: "A module does not import @trellis/core's entry point, nor reach other modules around their doors." },
  ];
};
/** Ports, the kernel and the sandbox import no module (ports describe what modules use; the kernel loads the modules it is given). */
const noModules = [{ regex: '^(\\.\\.?/)+(.*/)?modules(/|$)', message: 'Ports and the kernel import no module: move what they need into the port or the kernel (docs/modules.md, "Doors").' }];
/** The kernel's own unit tests may check it against what modules really use, through the modules' doors only. */
const kernelSpecModules = [{ regex: '^(\\.\\.?/)+(.*/)?modules/(?![^/]+/index\\.js$)', message: 'A kernel test imports a module only through its door, modules/<name>/index.js.' }];

/**
 * `no-restricted-imports` for core's files. A later config's options for a rule replace an
 * earlier one's, so each kind of file gets one list: the database boundary (not for spec files)
 * plus the doors.
 */
const spec = '**/*.spec.ts';
const coreRule = (patterns, withDatabase) => ({ 'no-restricted-imports': ['error', { patterns: withDatabase ? [...coreDatabaseBoundary.patterns, ...patterns] : patterns }] });
const coreBoundaries = [
  ...Array.from({ length: 6 }, (_, i) => {
    const files = [`packages/core/src/modules/*/${'*/'.repeat(i)}*.ts`];
    return [
      { files, ignores: [spec], rules: coreRule(doorPatterns(i + 1), true) },
      { files: files.map((f) => f.replace(/\.ts$/, '.spec.ts')), rules: coreRule(doorPatterns(i + 1), false) },
    ];
  }).flat(),
  { files: ['packages/core/src/{ports,kernel,sandbox}/**/*.ts'], ignores: [spec], rules: coreRule(noModules, true) },
  { files: ['packages/core/src/{ports,sandbox}/**/*.spec.ts'], rules: coreRule(noModules, false) },
  { files: ['packages/core/src/kernel/**/*.spec.ts'], rules: coreRule(kernelSpecModules, false) },
];

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
  ...coreBoundaries,
  {
    // The files of a vitest worker share one module graph (vitest.config.ts, `isolate: false`): a
    // module mock would outlive its file and change what the next files import.
    files: ['**/*.spec.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['mock', 'doMock', 'hoisted'].map((property) => ({ object: 'vi', property, message: 'Test files share their worker\'s modules (vitest.config.ts): pass a fake through the container or a port instead of mocking a module.' })),
      ],
    },
  },
);
