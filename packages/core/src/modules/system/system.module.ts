import { defineModule } from '../../kernel/module.js';
import { defineRoute } from '../../kernel/http/route.js';
import { Reply } from '../../kernel/http/reply.js';
import { jsonObject, stringEnum, Type } from '../../kernel/http/response-schema.js';
import { kernelServiceIdentifier } from '../../kernel/tokens.js';
import { DOCS_ASSET_PATH, docsAsset, docsPage, docsPageSecurityHeaders } from './docs-page.js';

const tags = ['System'];

const livenessSchema = Type.Object({ status: Type.Optional(Type.Literal('ok')) });
const readinessSchema = Type.Object({ status: Type.Optional(stringEnum(['ready', 'unavailable'])), database: Type.Optional(Type.Boolean()) });
const openApiDocumentSchema = jsonObject({ description: 'OpenAPI 3.1 document' });

/** Health probes, the OpenAPI document and the API reference page. */
export const systemModule = defineModule({
  name: 'system',
  routes: [
    defineRoute({
      method: 'GET',
      path: '/healthz',
      summary: 'Liveness: the process answers',
      tags,
      auth: 'none',
      alwaysAvailable: true,
      response: { schema: livenessSchema },
      handler: () => ({ status: 'ok' as const }),
    }),
    defineRoute({
      method: 'GET',
      path: '/readyz',
      summary: 'Readiness: started, not stopping, and the database answers',
      tags,
      auth: 'none',
      alwaysAvailable: true,
      response: { schema: readinessSchema },
      errors: { 503: 'Starting, stopping, or the database does not answer' },
      async handler(ctx) {
        const kernel = ctx.get(kernelServiceIdentifier);
        const database = kernel.ready ? await kernel.ping() : false;
        const ok = kernel.ready && database;
        return Reply.json({ status: ok ? 'ready' : 'unavailable', database }, ok ? 200 : 503);
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/openapi.json',
      summary: 'This API as an OpenAPI 3.1 document',
      tags,
      auth: 'none',
      cors: 'any',
      response: { schema: openApiDocumentSchema },
      handler: (ctx) => ctx.get(kernelServiceIdentifier).openapi(),
    }),
    defineRoute({
      method: 'GET',
      path: '/docs',
      summary: 'API reference page (works offline)',
      tags,
      auth: 'none',
      hidden: true,
      handler: () => Reply.raw(docsPage, 'text/html; charset=utf-8', 200, { 'cache-control': 'no-cache', ...docsPageSecurityHeaders }),
    }),
    defineRoute({
      method: 'GET',
      path: DOCS_ASSET_PATH,
      summary: 'The API reference renderer (Scalar, served from this server)',
      tags,
      auth: 'none',
      hidden: true,
      async handler(ctx) {
        const asset = await docsAsset();
        if (!asset) return Reply.raw('The API reference renderer is missing from this installation.\n', 'text/plain; charset=utf-8', 404);
        const headers: Record<string, string> = { 'cache-control': 'public, max-age=3600', etag: asset.etag, vary: 'accept-encoding', 'x-content-type-options': 'nosniff' };
        if ((ctx.headers['if-none-match'] ?? '').split(',').some((tag) => tag.trim() === asset.etag)) return Reply.empty(304, headers);
        const gzip = /\bgzip\b/.test(ctx.headers['accept-encoding'] ?? '');
        return Reply.raw(gzip ? asset.gzip : asset.body, 'text/javascript; charset=utf-8', 200, gzip ? { ...headers, 'content-encoding': 'gzip' } : headers);
      },
    }),
  ],
});
