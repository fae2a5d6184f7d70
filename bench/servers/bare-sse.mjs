#!/usr/bin/env node
// An independent bare SSE server on node:http, the baseline of bench/runs.mjs --parts stream: it
// answers every request with the frames of a file (one SSE event per frame, separated by a blank
// line), one `res.write` per event the way a plain SSE server writes them as they come, waiting
// for 'drain' when the socket's buffer is full. Prints `{"port":..}` once it listens.
//
//   node bench/servers/bare-sse.mjs <frames file>
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const text = readFileSync(process.argv[2], 'utf8');
const frames = text.split('\n\n').filter(Boolean).map((frame) => `${frame}\n\n`);

const server = createServer(async (req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  for (const frame of frames) {
    if (!res.write(frame)) await new Promise((resolve) => res.once('drain', resolve));
    if (res.destroyed) return;
  }
  res.end();
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ port: server.address().port, events: frames.length })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
