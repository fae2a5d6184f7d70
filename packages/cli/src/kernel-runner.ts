import { createHost, type Host } from '@trellis/host';
import type { Kernel } from '@trellis/core';
import { pino } from 'pino';
import { loadConfig, type KernelFlags } from './config-loader.js';

/**
 * Boots a kernel from the command's flags without listening (migrations are not applied unless
 * `migrate` is set), runs `work`, and stops it. For commands such as `user create` or
 * `billing confirm-order`.
 */
export async function withKernel<T>(flags: KernelFlags, work: (kernel: Kernel) => Promise<T>, options: { migrate?: boolean } = {}): Promise<T> {
  const host: Host = createHost({ config: await loadConfig(flags), logger: pino({ level: process.env['TRELLIS_LOG_LEVEL'] ?? 'warn' }) });
  await host.kernel.start({ migrate: options.migrate, jobs: false });
  try {
    return await work(host.kernel);
  } finally {
    await host.kernel.stop();
  }
}
