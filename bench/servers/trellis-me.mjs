// Trellis's own GET /auth/me through the reference host (createHost), with every core module
// loaded, on the transport and principal cache setting the runner asks for.
import { createHost } from '@trellis/host';
import { ready } from './ready.mjs';

const { BENCH_DB, BENCH_JWT_SECRET, BENCH_TRANSPORT = 'uws', BENCH_PRINCIPAL_CACHE_MS } = process.env;
const host = createHost({
  config: {
    server: { host: '127.0.0.1', port: 0, transport: BENCH_TRANSPORT },
    database: { url: `sqlite:${BENCH_DB}` },
    auth: { jwtSecret: BENCH_JWT_SECRET, ...(BENCH_PRINCIPAL_CACHE_MS === undefined ? {} : { principalCacheTtlMs: Number(BENCH_PRINCIPAL_CACHE_MS) }) },
    log: { level: 'error' },
  },
});
await host.start();
ready(host.port, { transport: host.transport, principalCacheTtlMs: host.kernel.config.auth.principalCacheTtlMs });
process.on('SIGTERM', () => void host.stop().then(() => process.exit(0)));
