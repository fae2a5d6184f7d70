import { createServer, type Server } from 'node:http';
import type { LookupAddress } from 'node:dns';
import { NetworkGuard, type AllowPrivateNetworks, type GuardResolver } from '@trellis/core';

/**
 * URL hosts that all name 127.0.0.1 (or the loopback in IPv6 forms): decimal, hexadecimal, octal
 * and short IPv4 forms, a name, and IPv4-mapped, SIIT, IPv4-compatible and NAT64 IPv6 forms, plus
 * 0.0.0.0 (which Linux connects to this host).
 */
export const loopbackHostForms: readonly string[] = [
  '127.0.0.1',
  'localhost',
  '2130706433',
  '0x7f000001',
  '0x7f.0x0.0x0.0x1',
  '0177.0.0.1',
  '127.1',
  '127.0.1',
  '127.000.000.001',
  '0.0.0.0',
  '0',
  '[::1]',
  '[0:0:0:0:0:0:0:1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '[0:0:0:0:0:ffff:127.0.0.1]',
  '[::ffff:0:127.0.0.1]',
  '[::127.0.0.1]',
  '[64:ff9b::127.0.0.1]',
  '[2002:7f00:1::1]',
  '[::]',
];

/** `http://<form>:<port><path>` for every loopback form. */
export const loopbackUrls = (port: number, path = ''): string[] => loopbackHostForms.map((host) => `http://${host}:${port}${path}`);

/** The name the rebinding resolver answers for. */
export const rebindingName = 'rebind.trellis.test';

/**
 * A resolver that answers `rebindingName` with `allowed` and `refused` in turn, switching every
 * `period` answers (a name flipping between two addresses, as in DNS rebinding), and fails other names.
 */
export function flippingResolver(allowed: string, refused: string, period = 1): GuardResolver & { readonly calls: number } {
  let calls = 0;
  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    if (hostname !== rebindingName) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    const address = Math.floor(calls / period) % 2 === 0 ? allowed : refused;
    calls += 1;
    return [{ address, family: 4 }];
  };
  return Object.defineProperty(resolve, 'calls', { get: () => calls }) as GuardResolver & { readonly calls: number };
}

/** An HTTP server on `127.0.0.2:<port>` that counts the requests reaching it (the internal service a rebinding would reach). */
export async function startTrap(port: number): Promise<{ readonly hits: number; close(): Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((_req, res) => {
    hits += 1;
    res.setHeader('content-type', 'application/json');
    res.end('{"trap":true}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.2', resolve);
  });
  return {
    get hits() {
      return hits;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface RebindingOutcome {
  succeeded: number;
  refused: number;
  /** Failures that were not the guard's refusal (should be none). */
  other: unknown[];
  trapHits: number;
  resolutions: number;
}

/**
 * Runs `attempt` `rounds` times, each with a fresh guard (so a fresh connection) that allows
 * 127.0.0.1 and whose resolver flips `rebindingName` between 127.0.0.1 (the server under test) and
 * 127.0.0.2 (a trap on the same port) every `period` answers. `attempt` gets the guard and `http://rebind.trellis.test:<port>`.
 * The guard holds when the trap is never reached.
 */
export async function runRebinding(
  port: number,
  attempt: (guard: NetworkGuard, origin: string) => Promise<unknown>,
  options: { rounds?: number; period?: number; allow?: AllowPrivateNetworks; isRefusal: (error: unknown) => boolean },
): Promise<RebindingOutcome> {
  const trap = await startTrap(port);
  const resolve = flippingResolver('127.0.0.1', '127.0.0.2', options.period);
  const outcome: RebindingOutcome = { succeeded: 0, refused: 0, other: [], trapHits: 0, resolutions: 0 };
  try {
    for (let round = 0; round < (options.rounds ?? 10); round += 1) {
      const guard = new NetworkGuard({ allowPrivateNetworks: options.allow ?? ['127.0.0.1'], resolve });
      try {
        await attempt(guard, `http://${rebindingName}:${port}`);
        outcome.succeeded += 1;
      } catch (error) {
        if (options.isRefusal(error)) outcome.refused += 1;
        else outcome.other.push(error);
      } finally {
        await guard.close();
      }
    }
  } finally {
    outcome.trapHits = trap.hits;
    outcome.resolutions = resolve.calls;
    await trap.close();
  }
  return outcome;
}
