// Owns preparing the invoice-paging requests: for random updatedSince values spread over the loaded
// invoices' change times, ask a target for the first page and keep the cursor it answers, so that the
// measured request is a page request with a cursor that this very target issued.
import { expect, mapConcurrent } from './api.ts';
import type { PageStart } from './scenarios.ts';

export async function pageStarts(
  baseUrl: string,
  key: string,
  range: { from: Date; to: Date },
  count: number,
): Promise<PageStart[]> {
  const span = range.to.getTime() - range.from.getTime();
  const sinces = Array.from({ length: count }, () =>
    new Date(range.from.getTime() + Math.floor(Math.random() * span)).toISOString(),
  );
  const starts = await mapConcurrent(sinces, 4, async (updatedSince) => {
    const page = await expect(
      200,
      baseUrl,
      'GET',
      `/api/v1/invoices?updatedSince=${encodeURIComponent(updatedSince)}`,
      {
        token: key,
      },
    );
    return page.body.nextCursor ? { updatedSince, cursor: page.body.nextCursor as string } : undefined;
  });
  const usable = starts.filter((s): s is PageStart => s !== undefined);
  if (usable.length === 0) throw new Error(`${baseUrl} answered no second page for any updatedSince`);
  return usable;
}
