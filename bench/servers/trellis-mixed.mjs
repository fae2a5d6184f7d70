// The host of the mixed-load bench (bench/mixed-load.mjs): the reference host on the prepared
// SQLite database, with the OpenAI adapter (pointed by the bench at its local fake model server),
// free runs and model calls, and limits that let one user hold every idle socket. Admission
// control (`server.admission`) comes from BENCH_ADMISSION (JSON), so the runner can compare.
import { aiProvidersServiceIdentifier, provide, vectorStoreServiceIdentifier } from '@trellis/core';
import { OpenAiProvider } from '@trellis/ai-openai';
import { createHost } from '@trellis/host';
import { ready } from './ready.mjs';

const { BENCH_DB, BENCH_JWT_SECRET, BENCH_TRANSPORT = 'uws', BENCH_ADMISSION = '{}' } = process.env;
const unlimited = { perIp: 1_000_000_000, perAccount: 1_000_000_000 };
const host = createHost({
  config: {
    server: { host: '127.0.0.1', port: 0, transport: BENCH_TRANSPORT, admission: JSON.parse(BENCH_ADMISSION) },
    database: { url: `sqlite:${BENCH_DB}` },
    auth: { jwtSecret: BENCH_JWT_SECRET, rateLimit: unlimited },
    realtime: { maxConnectionsPerUser: 100_000, maxConnectionsPerTarget: 100_000 },
    billing: { plans: { free: { name: 'Free', rank: 0, monthlyCredits: 1_000_000_000, monthlyPrice: 0, yearlyPrice: 0 } } },
    ai: { pricing: { default: { input: 0, output: 0 } } },
    // The fake model the conversation sends reach listens on loopback (in the generator).
    network: { allowPrivateNetworks: ['127.0.0.1'] },
    log: { level: 'error' },
  },
  adapters: [provide(aiProvidersServiceIdentifier, [new OpenAiProvider()])],
});
await host.start();
// The saved in-memory vector index is restored in the background at start: measured once it is.
await host.kernel.get(vectorStoreServiceIdentifier).idle?.();
// --db-timing: where the connection's time goes, printed on SIGUSR2 (bench/servers/db-timing.mjs).
if (process.env.BENCH_DB_TIMING) {
  const { instrumentDatabase } = await import('./db-timing.mjs');
  const timing = await instrumentDatabase(host);
  let step = 0;
  process.on('SIGUSR2', () => timing.report(`host, step ${++step}`));
}
ready(host.port, { transport: host.transport });
process.on('SIGTERM', () => void host.stop().then(() => process.exit(0)));
