// Owns paging cursors: an opaque, signed token naming the last record of a page (keyset paging), bound
// to the list and its filters. Anything not issued for this list and these filters is invalid_cursor.
import { createHmac, timingSafeEqual } from 'node:crypto';
import canonicalize from 'canonicalize';
import { AppError, type FieldError } from './errors.ts';

export type CursorPosition = Array<string | number>;

export class CursorCodec {
  readonly #secret: Buffer;

  constructor(secretHex: string) {
    this.#secret = Buffer.from(secretHex, 'hex');
  }

  #sign(list: string, filters: object, payload: string): Buffer {
    return createHmac('sha256', this.#secret)
      .update(`${list}\u0000${canonicalize(filters) ?? ''}\u0000${payload}`)
      .digest()
      .subarray(0, 16);
  }

  encode(list: string, filters: object, position: CursorPosition): string {
    const payload = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${payload}.${this.#sign(list, filters, payload).toString('base64url')}`;
  }

  decode(list: string, filters: object, cursor: string): CursorPosition {
    const refuse = () =>
      new AppError(
        'invalid_cursor',
        'The cursor was not issued for this list and these filters; start from the first page.',
        {
          errors: [
            {
              field: 'cursor',
              code: 'invalid',
              message: 'cursor was not issued for this list and these filters',
            },
          ],
        },
      );
    const [payload, signature, extra] = cursor.split('.');
    if (!payload || !signature || extra !== undefined) throw refuse();
    // Compared as text: base64 decoding ignores the spare bits of the last character.
    const expected = Buffer.from(this.#sign(list, filters, payload).toString('base64url'));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refuse();
    const position: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    if (!Array.isArray(position)) throw refuse();
    return position as CursorPosition;
  }
}

/** The shape of every cursor the service issues: a base64url payload, a dot, a 16-byte signature. */
const CURSOR_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/;

/**
 * The error naming a cursor that no list could have issued (not of a cursor's shape), or undefined:
 * reported with a query's other wrong parameters, so one answer names them all. A cursor of the right
 * shape is judged by the list itself (invalid_cursor when it was issued for another list or filters).
 */
export function malformedCursorError(cursor: unknown): FieldError | undefined {
  if (typeof cursor !== 'string' || CURSOR_SHAPE.test(cursor)) return undefined;
  return {
    field: 'cursor',
    code: 'invalid',
    message: 'cursor was not issued for this list and these filters',
  };
}

/** The list answer of a list that is answered whole, on one page. */
export function wholeList<Item>(data: Item[]): {
  object: 'list';
  data: Item[];
  hasMore: false;
  nextCursor: null;
} {
  return { object: 'list', data, hasMore: false, nextCursor: null };
}

/** Cuts a fetched page (limit + 1 rows) to size and builds the list answer. */
export function pageOf<Row, Item>(
  rows: Row[],
  limit: number,
  toItem: (row: Row) => Item,
  positionOf: (row: Row) => CursorPosition,
  makeCursor: (position: CursorPosition) => string,
): { object: 'list'; data: Item[]; hasMore: boolean; nextCursor: string | null } {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    object: 'list',
    data: pageRows.map(toItem),
    hasMore,
    nextCursor: hasMore && last !== undefined ? makeCursor(positionOf(last)) : null,
  };
}
