import type { HttpResponse, us_socket_context_t } from 'uWebSockets.js';

/** What `upgradeAfterDecision` needs of another open WebSocket of the same event loop. */
export interface CorkDonor {
  cork(callback: () => void): unknown;
}

/**
 * Completes a WebSocket upgrade that was decided after uWS's `upgrade` handler returned (the
 * realtime and collaboration channels look the token and the target up first).
 *
 * Never inside a cork of `res` alone. In the uWebSockets.js build this host loads,
 * `HttpResponse::cork` recognises an upgrade made in its callback only by the socket's address
 * changing, but the upgrade reallocates the socket in place (a WebSocket's data is smaller than
 * an HTTP response's). `cork` then reads the HTTP response state from memory the allocator has
 * just reclaimed, and whenever those bytes read "connection: close, response sent" it shuts the
 * new WebSocket down right after `open`: the client sees its socket open, then close with 1006
 * before any reply. (Fixed upstream in uWebSockets' `HttpResponse::cork`, pull request #1929; not
 * in this build.)
 *
 * With `donor` (any other open WebSocket of this event loop) the upgrade runs inside the donor's
 * cork: `res` cannot take the cork then, so its own cork just runs the callback, with none of the
 * HTTP bookkeeping after it, and uWS sees the writes as corked. Without one the upgrade is not
 * corked at all, and uWS prints its "writes must be made from within a corked callback" warning
 * for it. Either way the 101 response leaves in a few small writes instead of one.
 */
export function upgradeAfterDecision<UserData>(
  res: HttpResponse,
  userData: UserData,
  secWebSocketKey: string,
  secWebSocketProtocol: string,
  secWebSocketExtensions: string,
  context: us_socket_context_t,
  donor?: CorkDonor,
): void {
  const upgrade = () => res.upgrade<UserData>(userData, secWebSocketKey, secWebSocketProtocol, secWebSocketExtensions, context);
  if (donor) {
    let ran = false;
    try {
      donor.cork(() => {
        ran = true;
        res.cork(upgrade);
      });
      return;
    } catch (error) {
      // A donor closed meanwhile refuses before running the callback: upgrade without it.
      if (ran) throw error;
    }
  }
  upgrade();
}
