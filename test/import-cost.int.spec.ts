import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspace } from './support/packaging.js';

// Importing @trellis/core is paid by every process that does: each `trellis` command, each
// worker, each CLI test's child. Dependencies that only some requests or jobs use are loaded when
// they are first used (docs/operations.md, "Startup"); this keeps them out of the import. The
// built package is what a user runs, so the test imports `dist` in a child process of its own.

const recorder = join(workspace, 'test', 'support', 'module-recorder.mjs');
const core = pathToFileURL(join(workspace, 'packages', 'core', 'dist', 'index.js')).href;
const host = pathToFileURL(join(workspace, 'packages', 'host', 'dist', 'index.js')).href;

/** Loaded on first use, never by the import: package names as they appear under node_modules. */
const onFirstUse = [
  'gpt-tokenizer', // knowledge: the chunker's token counts
  'mammoth', // knowledge: DOCX, with its ZIP and XML readers
  'jszip',
  'pako',
  '@xmldom/xmldom',
  'node-html-markdown', // knowledge: HTML and DOCX to Markdown, with its HTML parser
  'node-html-parser',
  'css-select',
  'csv-parse', // knowledge: CSV
  'unpdf', // knowledge: PDF
  '@modelcontextprotocol/sdk', // the MCP server and `mcp` tool actions, with zod
  'zod',
  'undici', // the network guard's dispatcher: the first outbound call
  'ajv', // JSON Schema validation: block attrs, structured output, evaluators
  'rate-limiter-flexible', // the first rate-limited request
];

/** The OpenTelemetry SDK the host installs when `tracing.enabled` (off by default). */
const tracingSdk = ['@opentelemetry/sdk-trace-node', '@opentelemetry/sdk-trace-base', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/instrumentation', '@opentelemetry/instrumentation-undici', 'protobufjs'];

let dir: string;
beforeAll(() => {
  for (const entry of [core, host]) if (!existsSync(new URL(entry))) throw new Error(`${entry} is not built: run \`pnpm build\` first (the test command does).`);
  dir = mkdtempSync(join(tmpdir(), 'trellis-import-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The packages (names under node_modules) a child `node` running `script` loaded. */
async function packagesLoadedBy(name: string, script: string): Promise<Set<string>> {
  const out = join(dir, `${name}.txt`);
  await promisify(execFile)(process.execPath, ['--import', pathToFileURL(recorder).href, '--input-type=module', '-e', script], {
    cwd: workspace,
    env: { ...process.env, TRELLIS_MODULE_RECORD: out },
  });
  const packages = new Set<string>();
  for (const file of readFileSync(out, 'utf8').split('\n')) {
    const match = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (match) packages.add(match[1]!);
  }
  return packages;
}

describe('importing @trellis/core (built)', () => {
  it('does not load the dependencies that only some requests and jobs use', async () => {
    const loaded = await packagesLoadedBy('import', `await import(${JSON.stringify(core)});`);
    // What every request needs is there (so the recording works)...
    expect(loaded).toContain('@mikro-orm/core');
    expect(loaded).toContain('class-validator');
    // ...and none of these.
    expect(onFirstUse.filter((name) => loaded.has(name))).toEqual([]);
  });

  it('loads them when their code paths first run', async () => {
    const loaded = await packagesLoadedBy(
      'use',
      `const core = await import(${JSON.stringify(core)});
       const document = await core.parseDocument('html', new TextEncoder().encode('<h1>Title</h1><p>One sentence. Two.</p>'));
       if (!document.text.startsWith('# Title')) throw new Error('unexpected text: ' + document.text);
       const chunks = core.chunkDocument(document, { chunkTokens: 50, overlapTokens: 0, parentTokens: 0 });
       if (!chunks.length || !(chunks[0].tokens > 0)) throw new Error('no tokens counted');
       const guard = new core.NetworkGuard({ allowPrivateNetworks: false });
       if (typeof guard.dispatcher.dispatch !== 'function') throw new Error('no dispatcher');
       await guard.close();
       const limited = await new core.InMemoryRateLimiter().hit('k', 1, 1000);
       if (!limited.allowed || (await new core.InMemoryRateLimiter().hit('k', 0, 1000)).allowed) throw new Error('rate limiter');
       const csv = await core.parseDocument('csv', new TextEncoder().encode('a,b\\n1,2\\n'));
       if (csv.text !== 'a: 1\\nb: 2') throw new Error('unexpected csv: ' + csv.text);`,
    );
    expect(['node-html-markdown', 'gpt-tokenizer', 'undici', 'csv-parse', 'rate-limiter-flexible'].filter((name) => !loaded.has(name))).toEqual([]);
  });
});

describe('importing @trellis/host (built)', () => {
  it('does not load the tracing SDK until tracing is installed', async () => {
    const loaded = await packagesLoadedBy('host', `await import(${JSON.stringify(host)});`);
    expect(loaded).toContain('@opentelemetry/api');
    expect([...onFirstUse, ...tracingSdk].filter((name) => loaded.has(name))).toEqual([]);
  });

  it('loads it when tracing is installed', async () => {
    const loaded = await packagesLoadedBy(
      'tracing',
      `const host = await import(${JSON.stringify(host)});
       const exporter = { export: (spans, done) => done({ code: 0 }), shutdown: async () => {} };
       const tracing = host.installTracing({ serviceName: 'import-cost', exporter, outbound: true });
       await tracing.shutdown();`,
    );
    expect(tracingSdk.filter((name) => name !== 'protobufjs' && !loaded.has(name))).toEqual([]);
  });
});
