// The service roles may read which migrations have run, so that a process started with only the
// service's login (MIGRATE_ON_START=false) can tell a database at this build's migration from one with
// migrations pending or from a newer build, and say so, without running DDL. Forward-only.
import type { Kysely } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(db, `GRANT SELECT ON kysely_migration TO ${APP_ROLE}, ${OPERATOR_ROLE};`);
}
