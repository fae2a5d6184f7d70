/**
 * A Trellis server with one more block kind: every built-in module, plus the module that
 * registers `uppercaseBlock` (uppercase.ts). Nothing in core changes.
 *
 *   pnpm --filter @trellis-examples/block-kind-uppercase start     (PORT, TRELLIS_DB, TRELLIS_JWT_SECRET)
 */
import { pathToFileURL } from 'node:url';
import { coreModules, type TrellisConfigInput } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { createHost, type Host } from '@trellis/host';
import { uppercaseModule } from './uppercase.js';

export interface ExampleOptions {
  port?: number;
  /** SQLite file, or `:memory:`. */
  database?: string;
  config?: TrellisConfigInput;
}

export async function startUppercaseExample(options: ExampleOptions = {}): Promise<Host> {
  const host = createHost({
    database: sqliteDatabase({ path: options.database ?? './trellis.db' }),
    modules: [...coreModules, uppercaseModule],
    config: { ...options.config, server: { host: '127.0.0.1', port: options.port ?? 3000, ...options.config?.server } },
  });
  await host.start();
  return host;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const host = await startUppercaseExample({
    port: Number(process.env.PORT ?? 3000),
    database: process.env.TRELLIS_DB,
    config: process.env.TRELLIS_JWT_SECRET ? { auth: { jwtSecret: process.env.TRELLIS_JWT_SECRET } } : undefined,
  });
  console.log(`Trellis with the uppercase block kind on ${host.url}`);
  const stop = () => void host.stop().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
