import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface CliPackageJson {
  name: string;
  version: string;
  engines?: { node?: string };
}

let root: string | undefined;

/**
 * The folder of the `@trellis/cli` package (holding package.json and templates/). Found by walking
 * up from this file, so it works from the bundle in dist/ and from the TypeScript sources.
 */
export function cliPackageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as CliPackageJson).name === '@trellis/cli') {
      root = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('Cannot find the @trellis/cli package folder.');
    dir = parent;
  }
}

export function cliPackageJson(): CliPackageJson {
  return JSON.parse(readFileSync(join(cliPackageRoot(), 'package.json'), 'utf8')) as CliPackageJson;
}

/** Every @trellis package is versioned together (one changesets `fixed` group). */
export function cliVersion(): string {
  return cliPackageJson().version;
}
