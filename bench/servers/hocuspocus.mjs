// The collaboration peer: Hocuspocus 3.4.4 (the Yjs WebSocket server of Tiptap), default
// configuration, no extensions (documents live in memory; Trellis also mirrors each document to
// its database, debounced), on Node's http server and ws.
import { Server } from '@hocuspocus/server';
import { answerProbe } from './probe.mjs';
import { ready } from './ready.mjs';

const server = new Server({ port: 0, address: '127.0.0.1', quiet: true, stopOnSignals: false });
answerProbe();
await server.listen();
ready(server.address.port);
process.on('SIGTERM', () => void server.destroy().then(() => process.exit(0)));
