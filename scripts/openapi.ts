// Writes the OpenAPI document generated from the route schemas to docs/openapi.json.
import fs from 'node:fs';
import path from 'node:path';
import { openApiDocument, serialiseDocument } from '../src/openapi-document.ts';

const target = path.resolve(import.meta.dirname, '..', 'docs', 'openapi.json');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, serialiseDocument(await openApiDocument()));
process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
