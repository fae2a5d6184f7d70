// The JSON-RPC peer: bare uWebSockets.js answering the frames Trellis's /v3/wss answers in the
// bench, with no framework: `auth` (any token) and `ping`, parsed with JSON.parse and answered
// with JSON.stringify, one frame per request, as Trellis does.
import { createRequire } from 'node:module';
import { answerProbe } from './probe.mjs';
import { ready } from './ready.mjs';

const uws = createRequire(import.meta.url)('uWebSockets.js');
answerProbe();
uws
  .App()
  .ws('/*', {
    maxPayloadLength: 64 * 1024,
    idleTimeout: 0,
    message: (ws, message) => {
      const request = JSON.parse(Buffer.from(message).toString());
      const result = request.method === 'ping' ? 'pong' : request.method === 'auth' ? { status: 'authenticated' } : null;
      ws.send(JSON.stringify({ jsonrpc: '2.0', result, id: request.id }));
    },
  })
  .listen('127.0.0.1', 0, (socket) => {
    if (!socket) throw new Error('uWS could not listen');
    ready(uws.us_socket_local_port(socket));
  });
process.on('SIGTERM', () => process.exit(0));
