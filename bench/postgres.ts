// Owns the bench's PostgreSQL databases: creates one named pb_bench_<random><suffix> on the server of
// DATABASE_URL, registers its DROP (WITH FORCE) for cleanup, and opens plain pg clients on it.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { onCleanup } from './cleanup.ts';

export function databaseUrlFor(base: string, database: string): string {
  const url = new URL(base);
  url.pathname = `/${database}`;
  return url.toString();
}

async function adminQuery(base: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** The databases this run created and has not dropped: their backends' CPU is the bench's own. */
export const benchDatabases = new Set<string>();

export function randomSuffix(): string {
  return randomBytes(4).toString('hex');
}

export async function createDatabase(base: string, name: string): Promise<BenchDatabase> {
  if (!/^pb_bench_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to create database ${name}`);
  await adminQuery(base, `CREATE DATABASE ${name}`);
  benchDatabases.add(name);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await adminQuery(base, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    benchDatabases.delete(name);
  };
  const forget = onCleanup(`drop database ${name}`, drop);
  return {
    name,
    url: databaseUrlFor(base, name),
    drop: async () => {
      await drop();
      forget();
    },
  };
}

export async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}
