// Owns placing the schema on a Citus cluster: after the migrations, on a database where the citus
// extension is installed and worker nodes are added, every table of the schema is placed (tenant
// tables distributed by practice_id and colocated, catalogue and look-up tables as reference tables,
// the rest left as plain tables of the coordinator), the functions the nodes run are distributed, and the settings the
// nodes need are made. Idempotent: a table or function already placed is left alone, so every
// `practice-billing migrate` runs it, and a new table a migration adds is placed on the next one. On
// plain PostgreSQL and the embedded database nothing of it applies (docs/scale-out.md).
import { type Kysely, sql } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE } from '../../../migrations/security.ts';

/** Global tables: a copy on every node, joined with every practice's rows. */
export const CITUS_REFERENCE_TABLES = [
  'practices',
  'clients',
  'api_keys',
  'service_settings',
  'code_systems',
  'code_concepts',
  'tariff_modifiers',
  'governing_bodies',
  'governing_body_rates',
  'insurance_schemes',
  'insurance_scheme_rates',
  'insurance_plans',
  'insurance_plan_rates',
  'sandbox_insurer_messages',
] as const;

/** Tenant tables, distributed by practice_id and colocated with the first. */
export const CITUS_DISTRIBUTED_TABLES = [
  'patients',
  'practitioners',
  'coverages',
  'encounters',
  'encounter_diagnoses',
  'encounter_procedures',
  'practice_code_systems',
  'practice_code_concepts',
  'practice_prices',
  'invoices',
  'invoice_lines',
  'invoice_encounters',
  'invoice_clocks',
  'payments',
  'refunds',
  'claims',
  'claim_items',
  'notifications',
  'mail_outbox',
  'events',
  'webhook_endpoints',
  'webhook_deliveries',
  'webhook_attempts',
  'jobs',
  'audit_events',
  'idempotency_keys',
] as const;

/**
 * Left as plain tables of the coordinator: rate_limits (UNLOGGED request counts, never joined),
 * change_feed_samples (the coordinator's own transaction-id horizon) and operator_idempotency_keys
 * (the operator's stored answers: Citus does not know the table, so the operator's write of one
 * practice on another node still commits there in one phase, before the coordinator's own commit;
 * docs/decisions/0260-idempotency-keys-by-holder.md).
 */
export const CITUS_UNTOUCHED_TABLES = [
  'rate_limits',
  'change_feed_samples',
  'operator_idempotency_keys',
  'kysely_migration',
  'kysely_migration_lock',
] as const;

type Db = Kysely<unknown>;

/** True when the citus extension is installed here and at least one node besides the coordinator is added. */
export async function citusClusterReady(db: Db): Promise<boolean> {
  const { rows } = await sql<{ ready: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS ready`.execute(db);
  if (!rows[0]?.ready) return false;
  const nodes = await sql<{ workers: number }>`
    SELECT count(*)::int AS workers FROM pg_dist_node WHERE groupid <> 0 AND isactive`.execute(db);
  return (nodes.rows[0]?.workers ?? 0) > 0;
}

interface ForeignKey {
  table: string;
  name: string;
  definition: string;
}

/** The foreign keys touching a table not yet placed: Citus refuses to place a table that has them. */
async function foreignKeysToLift(db: Db, unplaced: string[]): Promise<ForeignKey[]> {
  if (unplaced.length === 0) return [];
  const { rows } = await sql<ForeignKey>`
    SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS definition
      FROM pg_constraint c
     WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
       AND (c.conrelid::regclass::text IN (${sql.join(unplaced)})
            OR c.confrelid::regclass::text IN (${sql.join(unplaced)}))
     ORDER BY 1, 2`.execute(db);
  return rows;
}

interface Trigger {
  table: string;
  name: string;
  definition: string;
}

/** The triggers on tables not yet placed (Citus places a table with triggers only without them). */
async function triggersToLift(db: Db, unplaced: string[]): Promise<Trigger[]> {
  if (unplaced.length === 0) return [];
  const { rows } = await sql<Trigger>`
    SELECT t.tgrelid::regclass::text AS table, t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
      FROM pg_trigger t
     WHERE NOT t.tgisinternal AND t.tgrelid::regclass::text IN (${sql.join(unplaced)})
     ORDER BY 1, 2`.execute(db);
  return rows;
}

/**
 * The tables placed as they should be. A tenant table Citus holds otherwise is not: an older build kept
 * idempotency_keys on the coordinator as a Citus local table, which create_distributed_table then
 * distributes, rows and all.
 */
async function placedTables(db: Db): Promise<Set<string>> {
  const { rows } = await sql<{ table: string; method: string }>`
    SELECT logicalrelid::regclass::text AS table, partmethod AS method FROM pg_dist_partition`.execute(db);
  const distributed = new Set<string>(CITUS_DISTRIBUTED_TABLES);
  return new Set(rows.filter((r) => !distributed.has(r.table) || r.method === 'h').map((r) => r.table));
}

async function placeTable(db: Db, table: string, anchor: string): Promise<void> {
  if ((CITUS_REFERENCE_TABLES as readonly string[]).includes(table))
    await sql`SELECT create_reference_table(${table})`.execute(db);
  else if (table === anchor) await sql`SELECT create_distributed_table(${table}, 'practice_id')`.execute(db);
  else
    await sql`SELECT create_distributed_table(${table}, 'practice_id', colocate_with => ${anchor})`.execute(
      db,
    );
}

/** Distributes the schema's own functions (not the extensions'), so every node can run them. */
async function distributeFunctions(db: Db): Promise<string[]> {
  const { rows } = await sql<{ signature: string }>`
    SELECT p.oid::regprocedure::text AS signature
      FROM pg_proc p
     WHERE p.pronamespace = 'public'::regnamespace
       AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
       AND NOT EXISTS (SELECT 1 FROM pg_dist_object o
                        WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid)
     ORDER BY 1`.execute(db);
  for (const { signature } of rows) await sql`SELECT create_distributed_function(${signature})`.execute(db);
  return rows.map((r) => r.signature);
}

/**
 * The settings the nodes need. The coordinator opens its connections to the nodes as the role a
 * statement runs under (the service's SET LOCAL ROLE), so the two service roles must be able to log
 * in (without a password: the nodes' pg_hba.conf lets them in from the coordinator alone); making
 * them so is the one step that needs a superuser (or CREATEROLE), and is skipped when already done.
 * The frame's SET LOCAL app.practice_id reaches the nodes' connections of the same transaction
 * through citus.propagate_set_commands = 'local', set on the database (its owner may).
 */
async function prepareNodesSettings(db: Db): Promise<string[]> {
  const done: string[] = [];
  for (const role of [APP_ROLE, OPERATOR_ROLE]) {
    const { rows } = await sql<{ login: boolean }>`
      SELECT rolcanlogin AS login FROM pg_roles WHERE rolname = ${role}`.execute(db);
    if (rows[0]?.login) continue;
    try {
      await sql`ALTER ROLE ${sql.id(role)} LOGIN`.execute(db);
    } catch (error) {
      throw new Error(
        `Citus: the role ${role} must be able to log in on every node; as a superuser run ALTER ROLE ${role} LOGIN (docs/scale-out.md)`,
        { cause: error },
      );
    }
    done.push(`role ${role} LOGIN`);
  }
  // A write to a reference table locks its copies on every node (lock_shard_resources), which Citus
  // allows only a role that may update the table: a service role that may insert into a reference
  // table but not update it (the operator role and the sandbox insurer's messages, written
  // ON CONFLICT DO NOTHING) is given UPDATE on it.
  for (const table of CITUS_REFERENCE_TABLES)
    for (const role of [APP_ROLE, OPERATOR_ROLE]) {
      const { rows: may } = await sql<{ insert: boolean; update: boolean }>`
        SELECT has_table_privilege(${role}, ${table}, 'INSERT') AS insert,
               has_table_privilege(${role}, ${table}, 'UPDATE') AS update`.execute(db);
      if (!may[0]?.insert || may[0].update) continue;
      await sql`GRANT UPDATE ON ${sql.id(table)} TO ${sql.id(role)}`.execute(db);
      done.push(`UPDATE on ${table} to ${role}`);
    }
  const { rows } = await sql<{ set: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
                    WHERE d.datname = current_database() AND s.setrole = 0
                      AND 'citus.propagate_set_commands=local' = ANY (s.setconfig)) AS set`.execute(db);
  if (!rows[0]?.set) {
    await sql`DO $$ BEGIN
      EXECUTE format('ALTER DATABASE %I SET citus.propagate_set_commands = %L', current_database(), 'local');
    END $$`.execute(db);
    done.push('citus.propagate_set_commands = local');
  }
  return done;
}

/**
 * Places every table not placed yet, lifting the foreign keys and triggers Citus will not place a
 * table with and putting them back once every table is placed, then distributes the functions. In one
 * transaction: a failure leaves the database as it was. Returns what it did, for the migrate command's
 * answer. Does nothing (and says so) where the cluster is not ready.
 */
export async function distributeOnCitus(db: Db): Promise<string[]> {
  if (!(await citusClusterReady(db))) return [];
  const settings = await prepareNodesSettings(db);
  const placed = await db.transaction().execute(async (trx) => {
    const done: string[] = [];
    await sql`SET LOCAL citus.enable_unsafe_triggers = on`.execute(trx);
    await sql`SET LOCAL citus.multi_shard_modify_mode = 'sequential'`.execute(trx);
    const already = await placedTables(trx);
    const order = [...CITUS_REFERENCE_TABLES, ...CITUS_DISTRIBUTED_TABLES];
    const unplaced = order.filter((t) => !already.has(t));
    const keys = await foreignKeysToLift(trx, unplaced);
    const triggers = await triggersToLift(trx, unplaced);
    for (const k of keys)
      await sql`ALTER TABLE ${sql.id(k.table)} DROP CONSTRAINT ${sql.id(k.name)}`.execute(trx);
    for (const t of triggers) await sql`DROP TRIGGER ${sql.id(t.name)} ON ${sql.id(t.table)}`.execute(trx);
    done.push(...(await distributeFunctions(trx)).map((f) => `function ${f}`));
    for (const table of unplaced) {
      await placeTable(trx, table, CITUS_DISTRIBUTED_TABLES[0]);
      done.push(`table ${table}`);
    }
    for (const t of triggers) await sql.raw(t.definition).execute(trx);
    for (const k of keys)
      await sql`ALTER TABLE ${sql.id(k.table)} ADD CONSTRAINT ${sql.id(k.name)} ${sql.raw(k.definition)}`.execute(
        trx,
      );
    return done;
  });
  return [...settings, ...placed];
}
