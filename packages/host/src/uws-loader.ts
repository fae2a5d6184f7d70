import type { Kernel } from '@trellis/core';
import type { Transport } from './transport.js';

export type UwsLoadResult = { ok: true; create(kernel: Kernel): Transport } | { ok: false; reason: string };

/**
 * Loads the uWebSockets.js transport. The native binary exists for some Node ABIs and libc
 * flavours only; when it does not load, the host falls back to `node:http`.
 */
export async function loadUwsTransport(): Promise<UwsLoadResult> {
  try {
    const { createUwsTransport } = await import('./uws-transport.js');
    return { ok: true, create: createUwsTransport };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}
