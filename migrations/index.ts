// The ordered list of migrations. Forward-only: a shipped migration is never edited.
import type { Migration } from 'kysely/migration';
import * as m0001 from './0001_foundation.ts';

export const migrations: Record<string, Migration> = {
  '0001_foundation': m0001,
};
