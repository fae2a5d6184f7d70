/**
 * The adapter packages the reference host can load, each imported only when the configuration
 * asks for it. They are optional peer dependencies of `@trellis/host`: an application installs
 * the ones it uses (an app on SQLite alone never installs `pg` or `ioredis`).
 *
 * Each import is a literal `import()` so bundlers and the test runner see the specifier, and the
 * types come from the workspace copies (devDependencies of this package).
 */
const importers = {
  '@trellis/db-sqlite': () => import('@trellis/db-sqlite'),
  '@trellis/db-postgres': () => import('@trellis/db-postgres'),
  '@trellis/pubsub-redis': () => import('@trellis/pubsub-redis'),
  '@trellis/ratelimit-redis': () => import('@trellis/ratelimit-redis'),
  '@trellis/ratelimit-postgres': () => import('@trellis/ratelimit-postgres'),
  '@trellis/queue-bullmq': () => import('@trellis/queue-bullmq'),
  '@trellis/payments-stripe': () => import('@trellis/payments-stripe'),
  '@trellis/vector-sqlite': () => import('@trellis/vector-sqlite'),
  '@trellis/vector-pgvector': () => import('@trellis/vector-pgvector'),
  '@trellis/speech-espeak': () => import('@trellis/speech-espeak'),
  '@trellis/address-cn': () => import('@trellis/address-cn'),
  '@trellis/ai-openai': () => import('@trellis/ai-openai'),
  '@trellis/ai-anthropic': () => import('@trellis/ai-anthropic'),
  '@trellis/ai-gemini': () => import('@trellis/ai-gemini'),
  '@trellis/ai-dify': () => import('@trellis/ai-dify'),
};

export type AdapterPackageName = keyof typeof importers;
export type AdapterPackage<N extends AdapterPackageName> = Awaited<ReturnType<(typeof importers)[N]>>;

/** Every adapter package the reference host knows, for documentation and checks. */
export const adapterPackageNames = Object.keys(importers) as AdapterPackageName[];

/**
 * The configuration asks for an adapter whose package is not installed. The message names the
 * package and the setting that asked for it (docs/errors.md, "Startup errors").
 */
export class AdapterNotInstalledError extends Error {
  override readonly name = 'AdapterNotInstalledError';
  readonly code = 'adapter_not_installed';
  constructor(
    readonly packageName: AdapterPackageName,
    /** What asked for it, e.g. `database.url postgres://…`. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${reason} needs the package ${packageName}, which is not installed. Install it next to @trellis/host: npm install ${packageName}`, options);
  }
}

/** Whether `error` says that `name` itself (not something it imports) could not be found. */
export function isMissingPackage(error: unknown, name: string): boolean {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  if (!e || typeof e.message !== 'string') return false;
  const missing = e.code === 'ERR_MODULE_NOT_FOUND' || e.code === 'MODULE_NOT_FOUND' || /Cannot find (package|module)|Failed to (load|resolve)/.test(e.message);
  return missing && (e.message.includes(`'${name}'`) || e.message.includes(`"${name}"`));
}

/** Imports an adapter package, or throws AdapterNotInstalledError naming it and `reason`. */
export async function importAdapter<N extends AdapterPackageName>(name: N, reason: string): Promise<AdapterPackage<N>> {
  try {
    return (await importers[name]()) as AdapterPackage<N>;
  } catch (error) {
    if (isMissingPackage(error, name)) throw new AdapterNotInstalledError(name, reason, { cause: error });
    throw error;
  }
}

/** Imports an adapter package when it is installed; `undefined` when it is not. */
export async function importAdapterIfInstalled<N extends AdapterPackageName>(name: N): Promise<AdapterPackage<N> | undefined> {
  try {
    return (await importers[name]()) as AdapterPackage<N>;
  } catch (error) {
    if (isMissingPackage(error, name)) return undefined;
    throw error;
  }
}
