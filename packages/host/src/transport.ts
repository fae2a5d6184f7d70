import type { Kernel } from '@trellis/core';

export type TransportName = 'uws' | 'node';

/** A listening HTTP + WebSocket front for a kernel. */
export interface Transport {
  readonly name: TransportName;
  /** Starts listening; resolves with the bound port (useful with port 0). */
  listen(host: string, port: number): Promise<number>;
  /** Stops accepting connections (in-flight requests continue). */
  stopAccepting(): Promise<void>;
  /** Closes every remaining connection. */
  close(): Promise<void>;
}

export type TransportFactory = (kernel: Kernel) => Transport;
