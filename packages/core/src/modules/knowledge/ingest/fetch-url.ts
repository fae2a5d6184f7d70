import type { NetworkGuard } from '../../../kernel/net/network-guard.js';
import { refusalOf } from '../../../kernel/net/network-guard.js';

/** A URL source's body and the media type it declared. */
export interface FetchedUrl {
  bytes: Uint8Array;
  mediaType: string | undefined;
}

/**
 * Fetches a URL source through the network guard (redirects followed, each connection checked),
 * reading at most `maxBytes`. Throws an `Error` whose message says why, for the source's `error`.
 */
export async function fetchUrl(guard: NetworkGuard, url: string, options: { maxBytes: number; timeoutMs: number; signal: AbortSignal }): Promise<FetchedUrl> {
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)]);
  let response: Response;
  try {
    response = await guard.fetch(url, { signal, redirect: 'follow', headers: { accept: 'text/html, application/pdf, text/markdown, text/plain, text/csv, */*;q=0.5' } });
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal) throw refusal;
    if (signal.aborted && !options.signal.aborted) throw new Error(`Fetching the URL took longer than ${options.timeoutMs} ms.`);
    throw new Error(`The URL could not be fetched: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`The URL answered HTTP ${response.status}.`);
  }
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > options.maxBytes) {
    await response.body?.cancel();
    throw new Error(`The URL's body is larger than ${options.maxBytes} bytes (knowledge.maxUrlBytes).`);
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of response.body ?? []) {
    size += (part as Uint8Array).length;
    if (size > options.maxBytes) throw new Error(`The URL's body is larger than ${options.maxBytes} bytes (knowledge.maxUrlBytes).`);
    parts.push(part as Uint8Array);
  }
  return { bytes: Buffer.concat(parts), mediaType: response.headers.get('content-type') ?? undefined };
}
