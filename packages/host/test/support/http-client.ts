import { get, request, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { contractFor } from '@trellis/test-support';

// Every response these raw clients read is checked against the host's /openapi.json (see
// test/support/contract.ts): heads for status and content type, whole bodies against the schema.
async function checkContract(url: string, method: string, status: number, contentType: string | undefined, body: string | null): Promise<void> {
  const contract = contractFor(url);
  if (!contract) return;
  const { pathname, search } = new URL(url);
  await contract.check(method, `${pathname}${search}`, status, contentType ?? null, body);
}

/** A GET on its own connection (no pooling), answered with the response head; the body is left unread. */
export function openResponse(url: string, headers: Record<string, string> = {}): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { agent: false, headers }, (res) => {
      checkContract(url, 'GET', res.statusCode ?? 0, res.headers['content-type'], null).then(
        () => resolve({ req, res }),
        (error: unknown) => {
          req.destroy();
          reject(error as Error);
        },
      );
    });
    req.on('error', reject);
  });
}

/** A request on a fresh connection; rejects with the socket error (ECONNREFUSED when nobody listens). */
export function requestOnNewConnection(url: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        checkContract(url, method, res.statusCode ?? 0, res.headers['content-type'], body).then(() => resolve({ status: res.statusCode ?? 0, body }), reject);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Reads a response body to the end (or until the connection fails). */
export function readAll(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('response aborted')));
  });
}

/** Resolves with the first `n` bytes of a body as they arrive (the response keeps flowing). */
export function readAtLeast(res: IncomingMessage, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= n) {
        res.off('data', onData);
        res.pause();
        resolve(Buffer.concat(chunks));
      }
    };
    res.on('data', onData);
    res.on('error', reject);
  });
}

/** Reads the first `n` bytes slowly (a pause after every chunk), so the server keeps meeting back-pressure. */
export function readSlowly(res: IncomingMessage, n: number, pauseMs = 2): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      res.pause();
      if (size >= n) {
        res.off('data', onData);
        resolve(Buffer.concat(chunks));
        return;
      }
      setTimeout(() => res.resume(), pauseMs);
    };
    res.on('data', onData);
    res.on('error', reject);
    res.resume();
  });
}

/** Polls `read` until it returns the same value `times` times in a row: the producer has stalled. */
export async function settled(read: () => number, { times = 4, everyMs = 50, maxPolls = 200 } = {}): Promise<number> {
  let last = read();
  let same = 0;
  for (let i = 0; i < maxPolls; i++) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    const now = read();
    if (now === last) {
      if (++same >= times) return now;
    } else {
      same = 0;
      last = now;
    }
  }
  return last;
}

/**
 * One raw keep-alive connection: send request text, read one response (head, and a body of the
 * declared length unless `noBody`). For checks fetch cannot make (HEAD then GET on one socket).
 */
export class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  private closed = false;

  private constructor(
    private readonly socket: Socket,
    private readonly origin: string,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => undefined);
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new RawConnection(socket, `http://127.0.0.1:${port}`)));
      socket.once('error', reject);
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async exchange(text: string, { noBody = false } = {}): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    this.socket.write(text);
    let end: number;
    while ((end = this.buffer.indexOf('\r\n\r\n')) === -1) await this.more();
    const head = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(head[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    this.buffer = this.buffer.subarray(end + 4);
    const length = noBody ? 0 : Number(headers['content-length'] ?? 0);
    while (this.buffer.length < length) await this.more();
    const body = this.buffer.subarray(0, length).toString('utf8');
    this.buffer = this.buffer.subarray(length);
    const [method = 'GET', target = '/'] = text.split('\r\n', 1)[0]!.split(' ');
    await checkContract(`${this.origin}${target}`, method, status, headers['content-type'], noBody ? null : body);
    return { status, headers, body };
  }

  /** Bytes that arrived beyond the responses read so far. */
  get leftover(): number {
    return this.buffer.length;
  }

  close(): void {
    this.socket.destroy();
  }

  private more(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
