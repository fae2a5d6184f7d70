// The baseline: bare uWebSockets.js. Every socket subscribes to one topic on open; a push is one
// `app.publish` of a JSON-RPC notification shaped like Trellis's (seq included), fanned out by uWS.
import { createRequire } from 'node:module';

const uws = createRequire(import.meta.url)('uWebSockets.js');
let connections = 0;
let seq = 0;
let port = 0;
const app = uws.App().ws('/*', {
  maxPayloadLength: 64 * 1024,
  idleTimeout: 0,
  maxBackpressure: 16 * 1024 * 1024,
  open: (ws) => {
    connections++;
    ws.subscribe('user');
  },
  message: (ws, message) => {
    // Answer anything with the shape of Trellis's auth result, so clients treat both alike.
    const request = JSON.parse(Buffer.from(message).toString());
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { status: 'authenticated', seq } }));
  },
  close: () => connections--,
});

process.on('message', (command) => {
  if (command.cmd === 'memory') {
    globalThis.gc?.();
    setTimeout(() => {
      globalThis.gc?.();
      process.send({ memory: process.memoryUsage(), connections });
    }, 50);
  } else if (command.cmd === 'push') {
    const cpu = process.cpuUsage();
    for (let i = 1; i <= command.count; i++) {
      app.publish('user', JSON.stringify({ jsonrpc: '2.0', method: 'system', params: { type: 'bench', content: command.payload, n: i, seq: ++seq } }), false);
    }
    process.send({ pushed: command.count, cpuMicros: process.cpuUsage(cpu) });
  } else if (command.cmd === 'cpu') {
    process.send({ cpu: process.cpuUsage() });
  }
});
app.listen('127.0.0.1', 0, (socket) => {
  if (!socket) throw new Error('uWS could not listen');
  port = uws.us_socket_local_port(socket);
  process.send({ ready: true, port, transport: 'uws (raw)' });
});
process.on('SIGTERM', () => process.exit(0));
