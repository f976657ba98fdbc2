// Owns the errors page that every Problem's `type` points at: one anchor per code.
import { ERROR_CODES } from '../platform/http/errors.ts';

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export function errorsPageHtml(): string {
  const rows = Object.entries(ERROR_CODES)
    .map(([code, def]) => {
      const anchor = code.replaceAll('_', '-');
      return `<tr id="${anchor}"><td><a href="#${anchor}"><code>${code}</code></a></td><td>${def.status}</td><td>${escapeHtml(def.title)}</td><td>${escapeHtml(def.description)}</td></tr>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Practice Billing API errors</title>
<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.4rem;vertical-align:top;text-align:left}tr:target{background:#fff3c4}</style>
</head><body>
<h1>Error codes</h1>
<p>Every error answer is a Problem (<code>application/json</code>) with <code>type</code>, <code>title</code>, <code>status</code>, <code>detail</code>, <code>code</code>, <code>requestId</code> and, for field problems, <code>errors</code> naming every wrong field. Branch on <code>code</code>: it never changes between releases.</p>
<table><thead><tr><th>code</th><th>status</th><th>title</th><th>meaning and what to do</th></tr></thead><tbody>
${rows}
</tbody></table>
<p><a href="/docs">API reference</a></p>
</body></html>`;
}
