#!/usr/bin/env node
// The reading client of bench/runs.mjs --parts stream, in a process of its own: on each IPC
// message `{url, method, headers, body, streams}` it opens `streams` requests at once (node:http,
// a connection each), reads every body to its end and answers `{ms, first, events, bytes, ok}`: the wall
// time from the first request to the last body's end, to the last stream's first bytes, the SSE events read (frames ending in a
// blank line), the bytes, and whether every body ended with run_complete and no block_error.
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function read({ url, method, headers, body }, started) {
  return new Promise((resolve, reject) => {
    let first = 0;
    const req = request(url, { method, headers, agent }, (res) => {
      res.setEncoding('utf8');
      let events = 0;
      let bytes = 0;
      let tail = '';
      let last = '';
      res.on('data', (chunk) => {
        if (!first) first = performance.now() - started;
        bytes += chunk.length;
        // Count "\n\n" across chunk boundaries.
        const text = tail + chunk;
        for (let i = text.indexOf('\n\n'); i !== -1; i = text.indexOf('\n\n', i + 2)) events++;
        tail = text.endsWith('\n') && !text.endsWith('\n\n') ? '\n' : '';
        last = (last + chunk).slice(-400);
      });
      res.on('end', () => resolve({ status: res.statusCode, events, bytes, last, first }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

process.on('message', async (job) => {
  try {
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: job.streams }, () => read(job, started)));
    const ms = performance.now() - started;
    const ok = answers.every((a) => a.status === 200 && a.last.includes('run_complete') && !a.last.includes('block_error'));
    process.send({ ms, first: Math.max(...answers.map((a) => a.first)), events: answers.reduce((s, a) => s + a.events, 0), bytes: answers.reduce((s, a) => s + a.bytes, 0), ok, last: ok ? '' : `${answers[0].status} ${answers[0].last}` });
  } catch (error) {
    process.send({ error: String(error?.stack ?? error) });
  }
});
process.on('disconnect', () => process.exit(0));
