import { connect } from 'node:net';

/** Answers whether a Redis server answers PING (or asks for credentials) at `url`, within `timeoutMs`. */
export function redisAnswers(url: string, timeoutMs = 5_000): Promise<void> {
  const parsed = new URL(url);
  const port = Number(parsed.port || 6379);
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const fail = (message: string) => {
      socket.destroy();
      reject(new Error(message));
    };
    const timer = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs);
    socket.once('error', (error) => {
      clearTimeout(timer);
      fail(error.message);
    });
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      clearTimeout(timer);
      const reply = data.toString('utf8');
      socket.destroy();
      // +PONG, or -NOAUTH when the URL's credentials are needed first: either way Redis answered.
      if (reply.startsWith('+PONG') || reply.startsWith('-NOAUTH') || reply.startsWith('-ERR')) resolve();
      else reject(new Error(`unexpected reply ${JSON.stringify(reply.slice(0, 40))}`));
    });
  });
}
