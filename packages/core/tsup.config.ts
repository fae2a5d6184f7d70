import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base.js';

// The CodeSandbox's worker thread is its own entry: `dist/quickjs-worker.js`, beside `dist/index.js`.
export default defineConfig({ ...packageBuild, entry: { index: 'src/index.ts', 'quickjs-worker': 'src/sandbox/quickjs-worker.ts' } });
