// Records every module a Node process loads, for tests about what importing a package costs:
//
//   TRELLIS_MODULE_RECORD=/tmp/list node --import ./test/support/module-recorder.mjs app.mjs
//
// appends one absolute file path a line to the file: each module the ESM loader resolves (from
// the loader-hooks thread, written before the import it answers goes on, so none is missed) and,
// at exit, every CommonJS module in `require.cache` (those `require` loads never pass the ESM
// hooks). Built-in modules are left out. Plain JavaScript so that `node --import` takes it as is.
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';

const out = process.env.TRELLIS_MODULE_RECORD;
if (!out) throw new Error('module-recorder: set TRELLIS_MODULE_RECORD to the file to write.');

const hooks = `
import { appendFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
let out;
export function initialize(data) { out = data.out; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (resolved.url.startsWith('file:')) appendFileSync(out, fileURLToPath(resolved.url) + '\\n');
  return resolved;
}
`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, import.meta.url, { data: { out } });

const require = createRequire(import.meta.url);
process.on('exit', () => {
  const files = Object.keys(require.cache);
  if (files.length) appendFileSync(out, files.join('\n') + '\n');
});
