import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';

/**
 * The console's HTTP side on both transports: the page and its files with a strict CSP, and
 * nothing at all when `console.enabled` is false.
 */
const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers });

describe.each(transports)('console on %s', (transport) => {
  let on: TestHost;
  let off: TestHost;
  beforeAll(async () => {
    [on, off] = await Promise.all([startTestHost(testDatabases()[0]!, transport), startTestHost(testDatabases()[0]!, transport, { config: { console: { enabled: false } } as never })]);
  });
  afterAll(async () => {
    await Promise.all([on?.close(), off?.close()]);
  });

  it('serves the page at /console and /console/ with a strict CSP, and its files from this origin', async () => {
    for (const path of ['/console', '/console/']) {
      const page = await get(`${on.url}${path}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const csp = page.headers.get('content-security-policy')!;
      const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));
      expect(directives.get('default-src')).toEqual(["'none'"]);
      expect(directives.get('script-src')).toEqual(["'self'"]);
      expect(directives.get('style-src')).toEqual(["'self'"]);
      expect(directives.get('connect-src')).toEqual(["'self'"]);
      expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
      expect(directives.get('base-uri')).toEqual(["'none'"]);
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      const html = await page.text();
      // No inline script or style: every script and stylesheet is a file under /console/.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(html).not.toMatch(/<style|style="/);
      const files = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      expect(files.some((f) => f.endsWith('.js'))).toBe(true);
      expect(files.some((f) => f.endsWith('.css'))).toBe(true);
      for (const file of files) {
        expect(file.startsWith('/console/')).toBe(true);
        const asset = await get(`${on.url}${file}`, { 'accept-encoding': 'gzip' });
        expect(asset.status, file).toBe(200);
        expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
        const etag = asset.headers.get('etag')!;
        expect((await get(`${on.url}${file}`, { 'if-none-match': etag })).status).toBe(304);
      }
    }
  });

  it('answers 404 for files it does not have, and never serves outside its folder', async () => {
    for (const path of ['/console/assets/nope.js', '/console/assets/..%2Fpackage.json', '/console/index.html', '/console/assets/.env']) {
      expect((await get(`${on.url}${path}`)).status, path).toBe(404);
    }
  });

  it('is off when console.enabled is false', async () => {
    for (const path of ['/console', '/console/', '/console/favicon.svg']) {
      const answer = await get(`${off.url}${path}`);
      expect(answer.status, path).toBe(404);
      expect(((await answer.json()) as { error: string }).error).toBe('route_not_found');
    }
    const page = await get(`${on.url}/console`);
    const script = /src="([^"]+\.js)"/.exec(await page.text())![1]!;
    expect((await get(`${off.url}${script}`)).status).toBe(404);
    expect((await get(`${off.url}/healthz`)).status).toBe(200);
  });
});
