import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * A CommonJS dependency required on first use rather than when `@trellis/core` is imported, for
 * callers that stay synchronous (a tokenizer behind a synchronous chunker, undici behind the
 * network guard's dispatcher, ajv, rate-limiter-flexible). `name` resolves from this package, as
 * an import of it would.
 */
export function lazyRequire<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}

/**
 * A module loaded on first use rather than when `@trellis/core` is imported: `load` runs once, its
 * promise is kept (a failed load is retried on the next call). For dependencies that only some
 * requests or jobs need (document parsers, the MCP SDK), so every process that imports the
 * package (each `trellis` command, each worker) does not pay for loading them.
 */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}
