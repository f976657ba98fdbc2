// Lanes and concurrency keys for the job queue (src/jobs/queue.ts, src/jobs/lanes.ts). Each job runs
// in a lane (claim work in 'claims', webhook deliveries in 'webhooks'), and each lane has slots of its
// own, so deliveries to slow receivers never hold up a claim. A job may name a concurrency key (a
// delivery names its endpoint): jobs of one key in one practice share a cap on how many run at once,
// which the take reads from the leased jobs themselves. The take walks the groups (lane, practice,
// key) with due jobs along jobs_lane_queue, one practice's rows at a time, and counts the running ones
// along jobs_held, which holds only jobs under a lease. A lane is one of JOB_LANES (src/jobs/lanes.ts),
// checked here. Deliveries still queued before this migration move to the webhooks lane (as 0008
// backfills events), keyed by their delivery's endpoint; one whose delivery row is gone moves without
// a key, so it runs uncapped. Finished jobs (done, failed) are left as they are, in the default
// 'claims': no take reads them again. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE jobs ADD COLUMN lane text NOT NULL DEFAULT 'claims' CHECK (lane IN ('claims', 'webhooks')),
                     ADD COLUMN concurrency_key text NOT NULL DEFAULT '';
    UPDATE jobs AS j SET lane = 'webhooks', concurrency_key = coalesce(d.endpoint_id, '')
      FROM webhook_deliveries AS d
     WHERE j.kind = 'webhook.deliver' AND j.state = 'queued'
       AND d.practice_id = j.practice_id AND d.id = j.payload ->> 'deliveryId';
    UPDATE jobs SET lane = 'webhooks'
     WHERE kind = 'webhook.deliver' AND state = 'queued' AND lane <> 'webhooks';
    CREATE INDEX jobs_lane_queue ON jobs (lane, practice_id, concurrency_key, run_at, id)
      WHERE state = 'queued';
    CREATE INDEX jobs_held ON jobs (lane, practice_id, concurrency_key)
      WHERE state = 'queued' AND locked_until IS NOT NULL;
  `,
  );
}
