import type { Options } from 'tsup';

/** The build every package shares: ESM for Node 20 with type declarations and source maps. */
export const packageBuild: Options = {
  entry: ['src/index.ts'],
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
};
