import { coreModules, createKernel, type Kernel, type KernelOptions, type TrellisConfigInput, type TrellisModule } from '@trellis/core';
import { pino } from 'pino';
import type { TestDatabase } from './databases.js';

export interface TestKernel {
  kernel: Kernel;
  close(): Promise<void>;
}

/** A started kernel on a fresh database, quiet logs, fast password hashing off (real Argon2id). */
export async function startTestKernel(
  db: TestDatabase,
  options: { config?: TrellisConfigInput; modules?: readonly TrellisModule[]; adapters?: KernelOptions['adapters'] } = {},
): Promise<TestKernel> {
  const handle = await db.create();
  const kernel = createKernel({
    database: handle.adapter,
    modules: options.modules ?? coreModules,
    adapters: options.adapters,
    logger: pino({ level: process.env.TRELLIS_TEST_LOG ?? 'silent' }),
    config: { auth: { jwtSecret: 'test-secret-test-secret-test-secret-0123' }, ...options.config },
  });
  await kernel.start();
  return {
    kernel,
    async close() {
      await kernel.stop();
      await handle.drop();
    },
  };
}
