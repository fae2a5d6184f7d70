// Run as its own process (see test/uws-async-upgrade.int.spec.ts), usually with glibc's
// MALLOC_PERTURB_ set so that memory the allocator reclaims is filled with a known byte. Serves
// one uWS WebSocket route whose upgrades are decided asynchronously, as the host's channels are,
// and completes them with the transport's `upgradeAfterDecision` (given an open socket to cork
// through, as the transport does, when there is one); then opens `count` sockets one after the
// other, each sending one message and waiting for its echo. With `keep`, one socket is opened
// first and stays open meanwhile. Prints one JSON line.
import { createRequire } from 'node:module';
import type { TemplatedApp, us_listen_socket, WebSocket as UwsSocket } from 'uWebSockets.js';
import WebSocket from 'ws';
import { upgradeAfterDecision } from '../../src/uws-upgrade.js';

const uws = createRequire(import.meta.url)('uWebSockets.js') as typeof import('uWebSockets.js');
const count = Number(process.argv[2] ?? 50);
const keepOne = process.argv[3] === 'keep';

interface Data {
  n: number;
}

const serverCloses: number[] = [];
const open = new Set<UwsSocket<Data>>();
const app: TemplatedApp = uws.App();
app.ws<Data>('/*', {
  idleTimeout: 120,
  maxPayloadLength: 1 << 20,
  upgrade: (res, req, context) => {
    const key = req.getHeader('sec-websocket-key');
    const protocol = req.getHeader('sec-websocket-protocol');
    const extensions = req.getHeader('sec-websocket-extensions');
    let aborted = false;
    res.onAborted(() => (aborted = true));
    // Decided on a later turn of the event loop, as a token and database lookup would be.
    setImmediate(() => {
      if (!aborted) upgradeAfterDecision<Data>(res, { n: 1 }, key, protocol, extensions, context, open.values().next().value);
    });
  },
  open: (ws) => {
    open.add(ws);
  },
  message: (ws: UwsSocket<Data>, message) => {
    ws.send(message, false);
  },
  close: (ws, code) => {
    open.delete(ws);
    serverCloses.push(code);
  },
});

app.listen('127.0.0.1', 0, async (listenSocket: us_listen_socket | false) => {
  if (!listenSocket) throw new Error('could not listen');
  const port = uws.us_socket_local_port(listenSocket as never);
  const clientCloses: Array<{ code: number; echoed: boolean }> = [];
  const kept = keepOne ? new WebSocket(`ws://127.0.0.1:${port}/kept`) : undefined;
  if (kept) await new Promise((resolve, reject) => kept.once('open', resolve).once('close', reject));
  for (let i = 0; i < count; i++) {
    clientCloses.push(
      await new Promise((resolve) => {
        let echoed = false;
        const ws = new WebSocket(`ws://127.0.0.1:${port}/socket`);
        ws.on('open', () => ws.send(`hello ${i}`));
        ws.on('message', () => {
          echoed = true;
          ws.close(1000);
        });
        ws.on('error', () => undefined);
        ws.on('close', (code) => resolve({ code, echoed }));
      }),
    );
  }
  const keptOpen = kept ? kept.readyState === WebSocket.OPEN : undefined;
  kept?.terminate();
  uws.us_listen_socket_close(listenSocket);
  const dropped = clientCloses.filter((c) => !c.echoed).length;
  process.stdout.write(`${JSON.stringify({ count, dropped, clientCodes: [...new Set(clientCloses.map((c) => c.code))], serverAbnormal: serverCloses.filter((c) => c === 1006).length, keptOpen })}\n`);
  process.exit(0);
});
