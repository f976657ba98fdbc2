// A short run of the change feed checker (test/resilience/change-feed-checker.ts, where the long one
// runs): writers committing and rolling back in random order, some taking their transaction id early
// and some held open past the readers' wait, while followers page the feed with the recipe; every
// committed change must be listed by every follower. PostgreSQL only; CHANGE_FEED_SEED replays a plan.
import { test } from 'node:test';
import {
  assertNothingMissed,
  checkerSeed,
  runChangeFeedChecker,
  summary,
} from './resilience/change-feed-checker.ts';

test('change feed checker, short run (postgres)', {
  skip: !process.env.DATABASE_URL && 'needs DATABASE_URL',
}, async () => {
  const seed = checkerSeed();
  console.log(`change-feed checker: CHANGE_FEED_SEED=${seed}`);
  const report = await runChangeFeedChecker({
    transactions: 800,
    writers: 10,
    followers: 4,
    seed,
    longShare: 0.003,
  });
  console.log(summary(report));
  assertNothingMissed(report);
});
