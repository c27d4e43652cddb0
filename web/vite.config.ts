// Vite + Vitest configuration for the logit microscope. The build writes fixed names
// (assets/index.js, assets/index.css: one chunk, no hashes, no sourcemaps) into
// $LS_WEB_OUT or dist/, so the C++ build can embed a known file list. `npx vite` serves the
// page with the API proxied to $LS_SERVER (default http://127.0.0.1:8080).
import { defineConfig } from 'vitest/config';

const server = process.env.LS_SERVER || 'http://127.0.0.1:8080';
const proxied = ['/v1', '/tokenize', '/detokenize', '/health'];

export default defineConfig({
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: process.env.LS_WEB_OUT || 'dist',
    emptyOutDir: true,
    sourcemap: false,
    cssCodeSplit: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    rollupOptions: {
      output: {
        entryFileNames: 'assets/index.js',
        chunkFileNames: 'assets/index.js',
        assetFileNames: (info) =>
          (info.names ?? []).some((n) => n.endsWith('.css')) ? 'assets/index.css' : 'assets/[name][extname]',
        inlineDynamicImports: true,
      },
    },
  },
  server: { proxy: Object.fromEntries(proxied.map((p) => [p, { target: server }])) },
  // A generous per-test timeout: the 151,936-token fixture re-scores in ~30 ms alone but
  // seconds on a loaded 2-core CI machine; a test must not fail on a slow day.
  test: { include: ['test/**/*.test.ts'], environment: 'node', testTimeout: 120_000 },
});
