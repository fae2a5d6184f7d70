// A Trellis reference host (every core module) serving the realtime channels, driven by the
// realtime bench over IPC: report memory, push through the push API, count connections.
import { PushService, ConnectionRegistry } from '@trellis/core';
import { createHost } from '@trellis/host';

const { BENCH_DB, BENCH_JWT_SECRET, BENCH_TRANSPORT = 'uws' } = process.env;
const host = createHost({
  config: {
    server: { host: '127.0.0.1', port: 0, transport: BENCH_TRANSPORT },
    database: { url: `sqlite:${BENCH_DB}` },
    auth: { jwtSecret: BENCH_JWT_SECRET },
    log: { level: 'error' },
    realtime: { maxConnectionsPerUser: 100_000, maxConnectionsPerTarget: 100_000, heartbeatTimeoutMs: 3_600_000, authTimeoutMs: 600_000 },
  },
});
await host.start();
const push = host.kernel.get(PushService);
const registry = host.kernel.get(ConnectionRegistry);

process.on('message', async (command) => {
  if (command.cmd === 'memory') {
    globalThis.gc?.();
    await new Promise((resolve) => setTimeout(resolve, 50));
    globalThis.gc?.();
    process.send({ memory: process.memoryUsage(), connections: registry.size });
  } else if (command.cmd === 'push') {
    const cpu = process.cpuUsage();
    for (let i = 1; i <= command.count; i++) await push.toUser(command.userId, 'system', { type: 'bench', content: command.payload, n: i });
    process.send({ pushed: command.count, cpuMicros: process.cpuUsage(cpu) });
  } else if (command.cmd === 'cpu') {
    process.send({ cpu: process.cpuUsage() });
  }
});
process.send({ ready: true, port: host.port, transport: host.transport });
process.on('SIGTERM', () => void host.stop().then(() => process.exit(0)));
