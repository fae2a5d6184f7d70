// Trellis's own GET /auth/me through the reference host (createHost), with every core module
// loaded, on the transport and principal cache setting the runner asks for. The same process
// serves the side client's writes (logins, document edits, refresh-token grants) and JSON-RPC on
// /v3/wss.
import { createHost } from '@trellis/host';
import { answerProbe } from './probe.mjs';
import { ready } from './ready.mjs';

const { BENCH_DB, BENCH_JWT_SECRET, BENCH_TRANSPORT = 'uws', BENCH_PRINCIPAL_CACHE_MS } = process.env;
const unlimited = { perIp: 1_000_000_000, perAccount: 1_000_000_000 };
const host = createHost({
  config: {
    server: { host: '127.0.0.1', port: 0, transport: BENCH_TRANSPORT },
    database: { url: `sqlite:${BENCH_DB}` },
    auth: { jwtSecret: BENCH_JWT_SECRET, rateLimit: unlimited, ...(BENCH_PRINCIPAL_CACHE_MS === undefined ? {} : { principalCacheTtlMs: Number(BENCH_PRINCIPAL_CACHE_MS) }) },
    oauth: { rateLimit: { perIp: 1_000_000_000, perClient: 1_000_000_000 } },
    // The JSON-RPC load opens dozens of sockets for one user.
    realtime: { maxConnectionsPerUser: 100_000, maxConnectionsPerTarget: 100_000 },
    log: { level: 'error' },
  },
});
answerProbe();
await host.start();
ready(host.port, { transport: host.transport, principalCacheTtlMs: host.kernel.config.auth.principalCacheTtlMs });
process.on('SIGTERM', () => void host.stop().then(() => process.exit(0)));
