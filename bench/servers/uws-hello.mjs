// The ceiling: uWebSockets.js answering a fixed body, no framework, no auth, no database.
import { createRequire } from 'node:module';
import { answerProbe } from './probe.mjs';
import { ready } from './ready.mjs';

answerProbe();

const uws = createRequire(import.meta.url)('uWebSockets.js');
const body = '{"hello":"world"}';
uws
  .App()
  .get('/*', (res) => {
    res.cork(() => res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(body));
  })
  .listen('127.0.0.1', 0, (socket) => {
    if (!socket) throw new Error('uWS could not listen');
    ready(uws.us_socket_local_port(socket));
  });
process.on('SIGTERM', () => process.exit(0));
