import { createServer, type Server } from 'node:http';
import { checkMetricsToken, TrellisError, type Kernel } from '@trellis/core';

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * `GET /metrics` on its own port (`metrics.port`), so the main listener can face the public
 * network while the scrape port stays internal. Same token rule as the route.
 */
export async function startMetricsServer(kernel: Kernel, host: string, port: number): Promise<MetricsServer> {
  const token = kernel.config.metrics.token;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: string, headers: Record<string, string>) => {
      res.writeHead(status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (path !== '/metrics') return send(404, JSON.stringify({ error: 'route_not_found', message: `No route matches ${req.method} ${path}.` }), { 'content-type': 'application/json; charset=utf-8' });
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(405, JSON.stringify({ error: 'method_not_allowed', message: `${req.method} is not allowed on /metrics.` }), { 'content-type': 'application/json; charset=utf-8', allow: 'GET' });
    }
    try {
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
      checkMetricsToken(token, headers);
    } catch (error) {
      const refusal = error as TrellisError;
      return send(refusal.status, JSON.stringify({ error: refusal.code, message: refusal.message }), { 'content-type': 'application/json; charset=utf-8', ...refusal.headers });
    }
    kernel.metrics.render().then(
      (text) => send(200, text, { 'content-type': kernel.metrics.contentType, 'cache-control': 'no-store' }),
      (error: unknown) => {
        kernel.log.error({ err: error }, 'metrics collection failed');
        send(500, JSON.stringify({ error: 'internal_error', message: 'Collecting the metrics failed.' }), { 'content-type': 'application/json; charset=utf-8' });
      },
    );
  });
  const bound = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
