import { createServer } from 'node:net';

/**
 * Whether `host:port` can be bound right now, by an exclusive (non-reuseport) socket. A taken
 * port is reported here before the kernel connects or migrates anything; it also catches a port
 * held by another uWebSockets.js process, which a second uWS listener would otherwise share.
 */
export function checkPortFree(host: string, port: number): Promise<{ ok: true } | { ok: false; code: string; message: string }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, code: error.code ?? 'UNKNOWN', message: error.message }));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve({ ok: true })));
  });
}

/** A sentence for a failed bind, naming what to do about it. */
export function describeBindFailure(host: string, port: number, code: string): string {
  switch (code) {
    case 'EADDRINUSE':
      return `Port ${port} on ${host} is already in use. Stop the other process or choose another port with --port (or TRELLIS_PORT).`;
    case 'EACCES':
      return `Not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges). Choose another port with --port (or TRELLIS_PORT).`;
    case 'EADDRNOTAVAIL':
      return `Cannot listen on ${host}: it is not an address of this machine. Use --host 127.0.0.1 or 0.0.0.0 (or TRELLIS_HOST).`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `Cannot resolve the host name ${host}. Use an IP address with --host (or TRELLIS_HOST).`;
    default:
      return `Cannot listen on ${host}:${port} (${code}).`;
  }
}

/**
 * `undefined` when the configured `server.host`/`server.port` can be bound now (or the port is 0),
 * else the sentence `trellis start` prints. For an application's own entry point (the scaffold's
 * server.mjs) to check before `host.start()` connects and migrates.
 */
export async function portProblem(server: { host?: string; port?: number }): Promise<string | undefined> {
  const host = server.host ?? '127.0.0.1';
  const port = server.port ?? 8080;
  if (port === 0) return undefined;
  const free = await checkPortFree(host, port);
  return free.ok ? undefined : describeBindFailure(host, port, free.code);
}
