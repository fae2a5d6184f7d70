import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

/**
 * The API reference page: Scalar's API reference (`@scalar/api-reference`, its self-contained
 * browser build) served from our own route, so it works offline and behind a firewall. The page
 * is a small HTML shell; the renderer is `GET /docs/api-reference.js` from the same server, and
 * it reads the OpenAPI document next to the page (`openapi.json`, found from the page's own URL so
 * it works under any mount prefix). Scalar gives the try-it client, an authentication panel with a
 * bearer-token field, search, and deep links (`#api/tag/system/GET/healthz`, one per operation).
 *
 * Everything Scalar could fetch from elsewhere is off: its web fonts (`withDefaultFonts`), its
 * telemetry, its hosted-client button, its AI agent (which asks Scalar's registry through Scalar's
 * proxy); and the CSP below would block them anyway.
 */

/** Where the page loads the renderer from, relative to the page (`/docs` → `/docs/api-reference.js`). */
export const DOCS_ASSET_PATH = '/docs/api-reference.js';

const config = {
  // Deep links are `#api/tag/<tag>/<METHOD>/<path>` (and `#api/description/...`, `#api/model/...`).
  slug: 'api',
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  persistAuth: false,
  agent: { disabled: true },
  authentication: { preferredSecurityScheme: 'bearer' },
  defaultOpenFirstTag: true,
  documentDownloadType: 'json',
};

const inlineScript = `(function () {
  var base = location.pathname.replace(/\\/docs\\/?$/, '');
  var config = ${JSON.stringify(config)};
  config.url = base + '/openapi.json';
  window.Scalar.createApiReference('#app', config);
})();`;

export const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Trellis API reference</title>
</head>
<body>
<div id="app"></div>
<noscript>The API reference needs JavaScript. The OpenAPI document itself is at openapi.json.</noscript>
<script src="docs/api-reference.js"></script>
<script>${inlineScript}</script>
</body>
</html>
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The page runs only the renderer from its own origin and its one inline script (pinned by hash),
 * fetches only from its own origin (the OpenAPI document and the try-it requests), and may not be
 * framed. Styles: the renderer injects its stylesheet and sets style attributes at run time, so
 * `style-src` allows inline styles (from self only; no remote stylesheet). No `unsafe-eval`.
 */
export const docsPageSecurityHeaders: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': [
    "default-src 'none'",
    `script-src 'self' ${sha256(inlineScript)}`,
    "style-src 'self' 'unsafe-inline'",
    "connect-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
});

/** The renderer, read once: its bytes, a gzip copy, and an ETag over the bytes. */
export interface DocsAsset {
  body: Uint8Array;
  gzip: Uint8Array;
  etag: string;
}

/** The copy the build puts beside `dist/index.js` (see tsup.config.ts), named here and there. */
export const BUNDLED_RENDERER = 'vendor/scalar-api-reference.js';
const RENDERER_MODULE = '@scalar/api-reference/browser/standalone.js';

let loading: Promise<DocsAsset | null> | undefined;

/**
 * The renderer's file: the copy shipped in the build, or (running from source in this workspace)
 * the one in the package. `null` when neither is there, which is a broken install. Read and
 * compressed once, off the event loop (zlib runs on the thread pool).
 */
export function docsAsset(): Promise<DocsAsset | null> {
  loading ??= load();
  return loading;
}

async function load(): Promise<DocsAsset | null> {
  let path: string | null = fileURLToPath(new URL(`./${BUNDLED_RENDERER}`, import.meta.url));
  if (!existsSync(path)) {
    try {
      path = createRequire(import.meta.url).resolve(RENDERER_MODULE);
    } catch {
      path = null;
    }
  }
  if (path === null) return null;
  const body = await readFile(path);
  const zipped = await promisify(gzip)(body, { level: 9 });
  return { body, gzip: zipped, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
}
