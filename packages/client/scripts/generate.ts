/**
 * Regenerates `src/generated/openapi.ts` (the types of every operation) from Trellis's OpenAPI
 * document, with openapi-typescript:
 *
 *   pnpm --filter @trellis/client generate            # the document of the built-in modules
 *   pnpm --filter @trellis/client generate <url>      # the /openapi.json of a running server
 *
 * The output is committed, so building the package needs no server; `test/generated.spec.ts`
 * fails when it no longer matches the built-in modules' routes.
 */
import { writeFileSync } from 'node:fs';
import { builtInDocument, renderTypes } from './render.js';

async function document(url: string | undefined): Promise<Record<string, unknown>> {
  if (!url) return builtInDocument();
  const response = await fetch(new URL('/openapi.json', url));
  if (!response.ok) throw new Error(`GET ${url}/openapi.json answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

const spec = await document(process.argv[2]);
const target = new URL('../src/generated/openapi.ts', import.meta.url);
writeFileSync(target, await renderTypes(spec));
console.log(`wrote ${target.pathname} (${Object.keys((spec.paths as object) ?? {}).length} paths)`);
