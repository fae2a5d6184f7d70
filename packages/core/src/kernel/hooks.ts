/**
 * Typed lifecycle hooks. Modules extend `TrellisHooks` by declaration merging:
 *
 *   declare module '@trellis/core' { interface TrellisHooks { 'run.before': { runId: string } } }
 *
 * Handlers run in priority order (lower first); a throwing handler stops the chain and the error
 * reaches the caller of `emit`, so a hook can veto an operation.
 */
export interface TrellisHooks {
  'user.created': { userId: string; email: string };
  'user.updated': { userId: string };
  'credential.revoked': { userId: string; credentialId: string };
  /** A change that may withdraw access was committed: open sockets it concerns check their access again, on every process. */
  'access.revoked': import('./auth/access-revocation.js').AccessRevokedSignal;
  'kernel.started': Record<string, never>;
  'kernel.stopping': Record<string, never>;
}

type Handler<P> = (payload: P) => void | Promise<void>;

interface Entry {
  priority: number;
  handler: Handler<any>;
}

export class Hooks {
  private readonly handlers = new Map<string, Entry[]>();

  on<K extends keyof TrellisHooks>(name: K, handler: Handler<TrellisHooks[K]>, priority = 100): () => void {
    const list = this.handlers.get(name) ?? [];
    const entry = { priority, handler };
    list.push(entry);
    list.sort((a, b) => a.priority - b.priority);
    this.handlers.set(name, list);
    return () => {
      const current = this.handlers.get(name);
      if (current) this.handlers.set(name, current.filter((e) => e !== entry));
    };
  }

  async emit<K extends keyof TrellisHooks>(name: K, payload: TrellisHooks[K]): Promise<void> {
    const list = this.handlers.get(name);
    if (!list) return;
    for (const { handler } of list) await handler(payload);
  }
}
