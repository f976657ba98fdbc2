// Owns the database work counts the bench reads: the statements, round trips and transactions a
// service process has sent (its `database` figures in GET /admin/v1/metrics, the same counters as
// practice_billing_db_*_total on /metrics), and differences between two readings. A reading is itself
// a request that runs statements; `ServiceCounter` measures what one reading costs (two readings with
// nothing between them) and takes that out of every difference.
import { call } from './api.ts';

export interface DbCounts {
  statements: number;
  roundTrips: number;
  transactions: number;
}

export const ZERO: DbCounts = { statements: 0, roundTrips: 0, transactions: 0 };

export function minus(a: DbCounts, b: DbCounts): DbCounts {
  return {
    statements: a.statements - b.statements,
    roundTrips: a.roundTrips - b.roundTrips,
    transactions: a.transactions - b.transactions,
  };
}

export function plus(a: DbCounts, b: DbCounts): DbCounts {
  return minus(a, times(b, -1));
}

export function times(a: DbCounts, factor: number): DbCounts {
  return {
    statements: a.statements * factor,
    roundTrips: a.roundTrips * factor,
    transactions: a.transactions * factor,
  };
}

/** Per unit, one decimal. */
export function per(a: DbCounts, units: number): DbCounts {
  const r = (n: number) => Math.round((n / Math.max(units, 1)) * 10) / 10;
  return { statements: r(a.statements), roundTrips: r(a.roundTrips), transactions: r(a.transactions) };
}

export function describeCounts(c: DbCounts): string {
  return `${c.statements} statements, ${c.roundTrips} round trips, ${c.transactions} transactions`;
}

/** The counts of a service process's API, or undefined when this build does not count. */
export async function serviceCounts(baseUrl: string, adminToken: string): Promise<DbCounts | undefined> {
  const answer = await call(baseUrl, 'GET', '/admin/v1/metrics', { token: adminToken });
  const database = answer.status === 200 ? (answer.body?.database as DbCounts | undefined) : undefined;
  return database && typeof database.statements === 'number' ? database : undefined;
}

/** Reads one API process's counts, each difference net of the readings' own statements. */
export class ServiceCounter {
  private readonly baseUrl: string;
  private readonly adminToken: string;
  /** What one reading adds. */
  readonly readingCost: DbCounts;

  private constructor(baseUrl: string, adminToken: string, readingCost: DbCounts) {
    this.baseUrl = baseUrl;
    this.adminToken = adminToken;
    this.readingCost = readingCost;
  }

  /** Undefined when the service does not count. */
  static async open(baseUrl: string, adminToken: string): Promise<ServiceCounter | undefined> {
    const first = await serviceCounts(baseUrl, adminToken);
    const second = await serviceCounts(baseUrl, adminToken);
    if (!first || !second) return undefined;
    return new ServiceCounter(baseUrl, adminToken, minus(second, first));
  }

  async read(): Promise<DbCounts> {
    const counts = await serviceCounts(this.baseUrl, this.adminToken);
    if (!counts) throw new Error('the service stopped answering its database counts');
    return counts;
  }

  /** after − before, less the readings between them (`readingsBetween` besides `after` itself). */
  difference(before: DbCounts, after: DbCounts, readingsBetween = 0): DbCounts {
    return minus(minus(after, before), times(this.readingCost, readingsBetween + 1));
  }
}
