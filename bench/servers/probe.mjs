import { AsyncLocalStorage, executionAsyncId } from 'node:async_hooks';

/**
 * Answers SIGUSR2 with one JSON line on stdout: whether promise hooks are on in this process
 * (a promise continuation has an async id of its own only then; see
 * test/integration/promise-hooks.int.spec.ts). The runner prints it next to the figures.
 *
 * BENCH_PROMISE_HOOKS=1 switches them on at start (one AsyncLocalStorage#run, as MikroORM's
 * em.transactional and em.flush do): how the server ran before the fix, for comparison.
 */
export function answerProbe() {
  if (process.env.BENCH_PROMISE_HOOKS === '1') new AsyncLocalStorage().run(true, () => undefined);
  process.on('SIGUSR2', async () => {
    await null;
    process.stdout.write(`${JSON.stringify({ probe: true, promiseHooks: executionAsyncId() !== 0 })}\n`);
  });
}
