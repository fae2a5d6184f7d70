import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';

/**
 * The API reference page in a real browser: Scalar renders every operation, the bearer-token
 * field, the try-it button and the per-operation anchors, under the page's CSP, with no blocked
 * or outside request. Needs a Chromium binary (`TRELLIS_TEST_CHROMIUM=/usr/bin/chromium`; on
 * Debian `apt-get install chromium`); without it the suite is skipped and says so.
 */
const binary = process.env.TRELLIS_TEST_CHROMIUM || undefined;
const reason = 'TRELLIS_TEST_CHROMIUM is not set';

/**
 * Loads `url` in headless Chromium; the DOM after the scripts ran, the console lines, and the
 * unexpected ones: everything but Scalar's version banner and its `<step>: <n> ms` timings.
 * (Chromium logs console.warn and console.error at the same level as console.log, so a schema
 * the renderer rejects, "document validation errors", is caught here by not being expected.)
 */
function render(url: string): Promise<{ dom: string; console: string[]; errors: string[] }> {
  return new Promise((resolve, reject) => {
    // A desktop-sized window: Scalar renders its developer toolbar only at its large breakpoint.
    const args = ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--window-size=1440,900', '--enable-logging=stderr', '--v=0', '--virtual-time-budget=30000', '--timeout=90000', '--dump-dom', url];
    const child = spawn(binary!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let dom = '';
    let log = '';
    child.stdout.on('data', (chunk: Buffer) => (dom += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', () => {
      const consoleLines = log.split('\n').filter((line) => line.includes(':CONSOLE'));
      resolve({ dom, console: consoleLines, errors: consoleLines.filter((line) => !/:CONSOLE[^\]]*\] "(@scalar\/api-reference@[\d.]+|[A-Za-z]+: \d+ ms)", source:/.test(line)) });
    });
  });
}

const suite = binary ? describe : describe.skip;
suite(`API reference page in Chromium${binary ? '' : ` (skipped: ${reason})`}`, () => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost(testDatabases()[0]!, 'uws');
  });
  afterAll(() => t?.close());

  it('renders the reference with try-it, a bearer-token field and anchors, and nothing is blocked or fetched from elsewhere', async () => {
    const page = await render(`${t.url}/docs`);
    expect(page.console.join('\n')).toContain('@scalar/api-reference@');
    expect(page.console.filter((line) => /Content Security Policy|Refused to|https?:\/\/(?!127\.0\.0\.1)/.test(line))).toEqual([]);
    const spec = await t.request('GET', '/openapi.json');
    const operations = Object.entries(spec.body.paths as Record<string, Record<string, { summary?: string; tags?: string[] }>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), summary: op.summary ?? '', tag: op.tags?.[0] ?? '' })),
    );
    // Every tag is a section with its anchor (`#api/tag/<tag>`); the first tag is open, and each of
    // its operations is rendered with its own anchor (`#api/tag/system/GET/healthz`) and a try-it button.
    const tagAnchors = new Set([...page.dom.matchAll(/<section[^>]* id="api\/tag\/([^"/]+)"/g)].map((m) => m[1]));
    expect(tagAnchors.size).toBe(new Set(operations.map((op) => op.tag)).size);
    const system = operations.filter((op) => op.tag === 'System');
    expect(system.length).toBeGreaterThan(2);
    for (const op of system) {
      expect(page.dom).toContain(`id="api/tag/system/${op.method}${op.path}"`);
      expect(page.dom).toContain(op.summary);
    }
    expect(page.dom.split('Test Request').length - 1).toBeGreaterThanOrEqual(system.length);
    // The authentication panel offers the API's bearer scheme with a token field.
    expect(page.dom).toContain('Bearer Token');
    // No console error (the parser once rejected a schema property named `default`), no vendor
    // developer toolbar (Scalar shows it on localhost unless told not to), and an icon of its own.
    expect(page.errors).toEqual([]);
    expect(page.dom).not.toContain('aria-label="Developer Tools"');
    expect(page.dom).toMatch(/<link rel="icon" type="image\/svg\+xml" href="data:image\/svg\+xml,/);
  }, 120_000);
});
