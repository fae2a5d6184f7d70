import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { builtInDocument, renderTypes } from '../scripts/render.js';

// src/generated/openapi.ts is generated from the route table. When this fails, run
// `pnpm --filter @trellis/client generate` and commit the result.
describe('the generated types of @trellis/client', () => {
  it('match the OpenAPI document of the built-in modules (run `pnpm --filter @trellis/client generate` when this fails)', async () => {
    const current = readFileSync(new URL('../src/generated/openapi.ts', import.meta.url), 'utf8');
    const fresh = await renderTypes(builtInDocument());
    expect(current.split('\n'), 'packages/client/src/generated/openapi.ts is stale').toEqual(fresh.split('\n'));
  });
});
