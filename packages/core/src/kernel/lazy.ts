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
