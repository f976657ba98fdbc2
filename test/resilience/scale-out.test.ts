// Several processes on one PostgreSQL database: two `practice-billing serve` and two
// `practice-billing worker` processes, with visits billed, issued and claimed through both APIs in
// turn. Nothing is lost or done twice: every job ran once, each practice's invoice numbers have no
// gap, every event reached its practice's webhook receiver exactly once, one Idempotency-Key sent to
// both APIs at the same moment makes one record, and a key revoked through one API is refused by the
// other within the documented bound (docs/scale-out.md, "The LISTEN connection").
// PostgreSQL only: the embedded database is one process's own.
import { postgresDatabase } from '../harness.ts';
import { scaleOutSuite } from './scale-out-suite.ts';

scaleOutSuite('two API and two worker processes on one database (postgres)', {
  skip: process.env.DATABASE_URL ? false : 'several processes share one database only on PostgreSQL',
  database: postgresDatabase,
});
