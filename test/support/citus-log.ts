// What a Citus coordinator did for each statement its clients sent, read from its log: the database
// logs every statement (log_statement = 'all') and what the coordinator sent to the nodes for it
// (citus.log_remote_commands) or ran on its own shards (citus.log_local_commands). Records are taken
// per backend (the pid of the log line prefix, '%m [%p] ' as initdb writes it), in order: a client's
// statement, then the commands it caused, until that backend's next statement. A statement naming a
// shard (`public.jobs_102758`) is not a client's: it is Citus running a shard's command on a
// connection of its own, or locally, and is left out. test/citus.test.ts uses it.

export interface LoggedStatement {
  pid: string;
  /** The statement as the client sent it. */
  text: string;
  /** What the coordinator sent to a node for it, or ran itself on one of its own shards. */
  sent: string[];
}

/** A transaction of one backend: its statements from BEGIN to COMMIT or ROLLBACK, or one on its own. */
export interface LoggedTransaction {
  pid: string;
  statements: LoggedStatement[];
}

const RECORD_START = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[(\d+)\] ([A-Z0-9]+): {2}/;
const CLIENT_STATEMENT = /^(?:statement|execute [^:\s]+): ([\s\S]*)$/;
const SENT = /^(?:issuing |executing the command locally: )([\s\S]*)$/;
const SHARD_NAME = /\bpublic\.[a-z_]+_\d{5,}\b/;

interface LogRecord {
  pid: string;
  level: string;
  message: string;
}

/** The log's records; a record's further lines (after a newline, PostgreSQL starts them with a tab) joined. */
function records(log: string): LogRecord[] {
  const found: LogRecord[] = [];
  for (const line of log.split('\n')) {
    const start = RECORD_START.exec(line);
    if (start) found.push({ pid: start[1]!, level: start[2]!, message: line.slice(start[0].length) });
    else if (line.startsWith('\t') && found.length > 0)
      found[found.length - 1]!.message += `\n${line.slice(1)}`;
  }
  return found;
}

/** The clients' statements in the log, each with what it caused the coordinator to send or run. */
export function loggedStatements(log: string): LoggedStatement[] {
  const statements: LoggedStatement[] = [];
  const current = new Map<string, LoggedStatement>();
  for (const { pid, level, message } of records(log)) {
    const statement = level === 'LOG' ? CLIENT_STATEMENT.exec(message) : null;
    if (statement && !SHARD_NAME.test(statement[1]!)) {
      const started = { pid, text: statement[1]!, sent: [] };
      statements.push(started);
      current.set(pid, started);
      continue;
    }
    const sent = level === 'NOTICE' ? SENT.exec(message) : null;
    if (sent) current.get(pid)?.sent.push(sent[1]!);
  }
  return statements;
}

/** The statements grouped into their backends' transactions, in the order each began. */
export function loggedTransactions(log: string): LoggedTransaction[] {
  const transactions: LoggedTransaction[] = [];
  const open = new Map<string, LoggedTransaction>();
  for (const statement of loggedStatements(log)) {
    const word = /^\s*(\w+)/.exec(statement.text)?.[1]?.toLowerCase();
    let transaction = open.get(statement.pid);
    if (!transaction) {
      transaction = { pid: statement.pid, statements: [] };
      transactions.push(transaction);
      if (word === 'begin' || word === 'start') open.set(statement.pid, transaction);
    }
    transaction.statements.push(statement);
    if (word === 'commit' || word === 'rollback' || word === 'end') open.delete(statement.pid);
  }
  return transactions;
}

/** The shard ids a command names (`invoices_102040`): each a table's name, an underscore and the id. */
export function shardIdsNamed(command: string): number[] {
  return [...command.matchAll(/\b[a-z_]+_(\d{5,})\b/g)].map((m) => Number(m[1]));
}
