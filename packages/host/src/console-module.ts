import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { defineModule, defineRoute, Reply, s, type InferConfig, type RequestContext, type RouteDefinition } from '@trellis/core';

/**
 * The console: the browser app of `@trellis/console` (a Vite build), served by the reference host
 * at `/console` with its files at `/console/assets/<file>`. Its views are in the URL's fragment
 * (`/console#/runs/...`), so one page serves them all. The build is copied into this package's
 * `dist/console/` (see tsup.config.ts), so an installed host serves it offline; running from
 * source in this workspace, it is read from the console package's own `dist/`.
 */
export const consoleConfigSchema = s.object({
  enabled: s.boolean().default(true).describe('Serve the browser console at `/console` (sign in, projects, runs with their live events, the playground, evaluations). `false`: the paths answer 404 like any unknown path.'),
});
export type ConsoleConfig = InferConfig<typeof consoleConfigSchema>;

interface ConsoleFile {
  body: Uint8Array;
  gzip: Uint8Array;
  type: string;
  etag: string;
}

interface ConsoleBuild {
  page: ConsoleFile;
  assets: Map<string, ConsoleFile>;
}

const types: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
};

/**
 * Everything the page may do: scripts and styles only from this server's files (no inline script,
 * no inline style, no eval), requests only to this origin (the API and the event streams), images
 * from here or `data:`, no fonts from elsewhere, no framing, no forms posted anywhere by the
 * browser itself (the app sends its requests with fetch).
 */
export const consoleSecurityHeaders: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
});

/** Where the build is: beside this file once built (`dist/console`), else the console package's `dist`. */
function buildDirectory(): string | null {
  const shipped = fileURLToPath(new URL('./console/', import.meta.url));
  if (existsSync(join(shipped, 'index.html'))) return shipped;
  try {
    const manifest = createRequire(import.meta.url).resolve('@trellis/console/package.json');
    const dist = join(dirname(manifest), 'dist');
    return existsSync(join(dist, 'index.html')) ? dist : null;
  } catch {
    return null;
  }
}

async function file(body: Uint8Array, type: string): Promise<ConsoleFile> {
  return { body, gzip: await promisify(gzip)(body, { level: 9 }), type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
}

/**
 * Reads the build once: the page with its relative asset URLs (`./assets/x.js`) made absolute under
 * the host's mount point, so `/console` and `/console/` both load them, and every file beside it.
 */
async function loadBuild(basePath: string): Promise<ConsoleBuild | null> {
  const dir = buildDirectory();
  if (dir === null) return null;
  const mount = `${basePath}/console`;
  const html = (await readFile(join(dir, 'index.html'), 'utf8')).replace(/(src|href)="\.\/([^"]+)"/g, (_m, attr: string, path: string) => `${attr}="${mount}/${path}"`);
  const assets = new Map<string, ConsoleFile>();
  for (const name of await readdir(dir)) {
    if (name === 'index.html' || !types[extname(name)]) continue;
    assets.set(name, await file(await readFile(join(dir, name)), types[extname(name)]!));
  }
  const assetDir = join(dir, 'assets');
  if (existsSync(assetDir)) {
    for (const name of await readdir(assetDir)) {
      if (types[extname(name)]) assets.set(`assets/${name}`, await file(await readFile(join(assetDir, name)), types[extname(name)]!));
    }
  }
  return { page: await file(Buffer.from(html, 'utf8'), 'text/html; charset=utf-8'), assets };
}

function send(ctx: RequestContext, found: ConsoleFile, headers: Record<string, string>): Reply {
  const all = { ...headers, etag: found.etag, vary: 'accept-encoding' };
  if ((ctx.headers['if-none-match'] ?? '').split(',').some((tag) => tag.trim() === found.etag)) return Reply.empty(304, all);
  const gzipped = /\bgzip\b/.test(ctx.headers['accept-encoding'] ?? '');
  return Reply.raw(gzipped ? found.gzip : found.body, found.type, 200, gzipped ? { ...all, 'content-encoding': 'gzip' } : all);
}

const missing = () => Reply.raw('The console is missing from this installation (build @trellis/console).\n', 'text/plain; charset=utf-8', 404);

function consoleRoutes(basePath: string): RouteDefinition[] {
  let loading: Promise<ConsoleBuild | null> | undefined;
  const build = () => (loading ??= loadBuild(basePath));
  const tags = ['System'];
  const page = async (ctx: RequestContext) => {
    const found = await build();
    return found ? send(ctx, found.page, { 'cache-control': 'no-cache', ...consoleSecurityHeaders }) : missing();
  };
  const asset = (prefix: string) => async (ctx: RequestContext) => {
    const found = await build();
    if (!found) return missing();
    const name = String((ctx.params as Record<string, string>)['file'] ?? '');
    const hit = /^[\w.-]+$/.test(name) ? found.assets.get(`${prefix}${name}`) : undefined;
    if (!hit) return Reply.raw('Not found.\n', 'text/plain; charset=utf-8', 404, { 'x-content-type-options': 'nosniff' });
    // Vite names the files in assets/ by their content hash: they never change under a name.
    const cache = prefix === 'assets/' ? 'public, max-age=31536000, immutable' : 'public, max-age=3600';
    return send(ctx, hit, { 'cache-control': cache, ...consoleSecurityHeaders });
  };
  return [
    defineRoute({ method: 'GET', path: '/console', summary: 'The browser console (a single page; views in the URL fragment)', tags, auth: 'none', hidden: true, handler: page }),
    defineRoute({ method: 'GET', path: '/console/assets/:file', summary: "The console's scripts and styles", tags, auth: 'none', hidden: true, handler: asset('assets/') }),
    defineRoute({ method: 'GET', path: '/console/:file', summary: "The console's icon and other top-level files", tags, auth: 'none', hidden: true, handler: asset('') }),
  ];
}

/** The host's `console` section and, unless `console.enabled` is false, the console's routes. */
export const consoleModule = defineModule({
  name: 'console',
  config: consoleConfigSchema,
  routes: (ctx) => ((ctx.section as ConsoleConfig).enabled === false ? [] : consoleRoutes(ctx.config.server.basePath)),
});
