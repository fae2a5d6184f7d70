// Plain node:http answering a fixed body: the reference the uWS ceiling is compared with.
import { createServer } from 'node:http';
import { answerProbe } from './probe.mjs';
import { ready } from './ready.mjs';

answerProbe();

const body = '{"hello":"world"}';
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 5_000;
server.listen(0, '127.0.0.1', () => ready(server.address().port));
process.on('SIGTERM', () => process.exit(0));
