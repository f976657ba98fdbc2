// A job as the queue stores it (table jobs): read by the take, the worker loop and the handlers.
import type { Selectable } from 'kysely';
import type { JobsTable } from '../platform/db/tables.ts';

export type JobRow = Selectable<JobsTable>;
