import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { LongRunningFirst } from './test/support/sequencer.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Tests run against the TypeScript sources of every package (no build needed), with the same
// legacy-decorator semantics as the build (experimentalDecorators, no emitted metadata).
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@trellis\/core$/, replacement: here('./packages/core/src/index.ts') },
      { find: /^@trellis\/db-sqlite$/, replacement: here('./packages/adapters/db-sqlite/src/index.ts') },
      { find: /^@trellis\/db-postgres$/, replacement: here('./packages/adapters/db-postgres/src/index.ts') },
      { find: /^@trellis\/db-mikro-orm$/, replacement: here('./packages/adapters/db-mikro-orm/src/index.ts') },
      { find: /^@trellis\/pubsub-redis$/, replacement: here('./packages/adapters/pubsub-redis/src/index.ts') },
      { find: /^@trellis\/ratelimit-redis$/, replacement: here('./packages/adapters/ratelimit-redis/src/index.ts') },
      { find: /^@trellis\/ratelimit-postgres$/, replacement: here('./packages/adapters/ratelimit-postgres/src/index.ts') },
      { find: /^@trellis\/payments-stripe$/, replacement: here('./packages/adapters/payments-stripe/src/index.ts') },
      { find: /^@trellis\/queue-bullmq$/, replacement: here('./packages/adapters/queue-bullmq/src/index.ts') },
      { find: /^@trellis\/ai-sdk$/, replacement: here('./packages/adapters/ai-sdk/src/index.ts') },
      { find: /^@trellis\/ai-openai$/, replacement: here('./packages/adapters/ai-openai/src/index.ts') },
      { find: /^@trellis\/ai-anthropic$/, replacement: here('./packages/adapters/ai-anthropic/src/index.ts') },
      { find: /^@trellis\/ai-gemini$/, replacement: here('./packages/adapters/ai-gemini/src/index.ts') },
      { find: /^@trellis\/ai-dify$/, replacement: here('./packages/adapters/ai-dify/src/index.ts') },
      { find: /^@trellis\/vector-sqlite$/, replacement: here('./packages/adapters/vector-sqlite/src/index.ts') },
      { find: /^@trellis\/vector-pgvector$/, replacement: here('./packages/adapters/vector-pgvector/src/index.ts') },
      { find: /^@trellis\/address-cn$/, replacement: here('./packages/adapters/address-cn/src/index.ts') },
      { find: /^@trellis\/speech-espeak$/, replacement: here('./packages/adapters/speech-espeak/src/index.ts') },
      { find: /^@trellis\/host$/, replacement: here('./packages/host/src/index.ts') },
      { find: /^@trellis\/cli$/, replacement: here('./packages/cli/src/index.ts') },
      { find: /^@trellis\/client$/, replacement: here('./packages/client/src/index.ts') },
      { find: /^@trellis\/test-support$/, replacement: here('./test/support/index.ts') },
    ],
  },
  test: {
    exclude: ['**/node_modules/**', '**/dist/**'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default is one worker fewer than the cores: one worker on a 2-core CI machine, which
    // then idles while integration files wait on sockets, databases and child processes. One worker
    // more than the cores keeps both busy; `--maxWorkers` on the command line still wins. Suites
    // isolate what they share (a database or schema per suite, random Redis key prefixes, port 0).
    maxWorkers: availableParallelism() + 1,
    // Files known to run for minutes start first (test/support/sequencer.ts).
    sequence: { sequencer: LongRunningFirst },
    globalSetup: [here('./test/support/global-setup.ts')],
    // `pnpm test:unit` runs the first (no sockets, no database server); `vitest run` runs both.
    // The files of a worker share its module graph (`isolate: false`): the framework is imported
    // once per worker, not once per file (isolated, the integration files spent 580 of the run's
    // 2,900 worker-seconds importing it again). So a file leaves the process as it found it: it
    // stops the hosts, servers and clients it starts, restores what it changes (fake timers, a
    // global dispatcher, `process.env`), and mocks no module (`vi.mock` would outlive the file).
    projects: [
      { extends: true, test: { name: 'unit', isolate: false, include: ['packages/**/*.spec.ts', 'examples/**/*.spec.ts', 'test/**/*.spec.ts'], exclude: ['**/*.int.spec.ts'] } },
      { extends: true, test: { name: 'integration', isolate: false, include: ['packages/**/*.int.spec.ts', 'examples/**/*.int.spec.ts', 'test/**/*.int.spec.ts'] } },
    ],
  },
});
