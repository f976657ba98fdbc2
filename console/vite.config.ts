// Builds the console into console/dist, served by the service at /console/. Offline: everything comes
// from node_modules.
import path from 'node:path';
import { defineConfig } from 'vite';

// biome-ignore lint/style/noDefaultExport: Vite reads the config from the default export
export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: path.join(import.meta.dirname, 'dist'),
    emptyOutDir: true,
    sourcemap: false,
    target: 'es2022',
  },
});
