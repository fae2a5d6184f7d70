/** Tells the runner (on stdout, one JSON line) that the server listens, and on which port. */
export function ready(port, extra = {}) {
  process.stdout.write(`${JSON.stringify({ ready: true, port, ...extra })}\n`);
}
