// Builds the operator console (console/) into console/dist with Vite, from node_modules only.
// `--if-missing` builds only when there is no build yet (npm start); npm install always rebuilds.
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'vite';

const root = path.resolve(import.meta.dirname, '..', 'console');
const ifMissing = process.argv.includes('--if-missing');

if (ifMissing && fs.existsSync(path.join(root, 'dist', 'index.html'))) process.exit(0);
await build({ configFile: path.join(root, 'vite.config.ts'), logLevel: 'warn' });
console.log(`console built into ${path.join(root, 'dist')}`);
