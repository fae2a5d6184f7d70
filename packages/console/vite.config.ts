import { defineConfig } from 'vite';

/**
 * The console is a static bundle: one HTML page, its scripts and its stylesheet, all from the
 * host's own origin (no CDN, no inline script or style: the host serves it under a strict CSP).
 * Paths are relative (`./assets/...`); the host rewrites them to its mount point when it serves
 * the page (packages/host/src/console-module.ts).
 */
export default defineConfig({
  base: './',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // No data: URLs for small assets and no inline module-preload polyfill: every byte is a file.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
