// The client package's types are generated, never kept by hand: the committed
// packages/client/src/generated/openapi.ts must equal what `npm run sdk:types` makes from
// docs/openapi.json today. And they type what a caller writes: the lines marked @ts-expect-error
// below must each be refused by `tsc --noEmit` (which `npm test` runs first), or tsc fails.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import type { Invoice, PracticeBilling } from '@practice-billing/client';
import { GENERATED, generateTypes } from '../packages/client/scripts/generate-types.ts';

test('the generated client types are current with docs/openapi.json (npm run sdk:types)', async () => {
  const fresh = await generateTypes();
  const committed = fs.readFileSync(GENERATED, 'utf8');
  assert.ok(fresh === committed, 'packages/client/src/generated/openapi.ts is stale: run npm run sdk:types');
});

/** Never called: type-checked by tsc only. */
export async function typedCalls(client: PracticeBilling): Promise<void> {
  // @ts-expect-error lastName and birthDate are required
  await client.patients.create({ givenNames: ['A'] });
  const robot = { givenNames: ['A'], lastName: 'B', birthDate: '2000-01-01', gender: 'robot' };
  // @ts-expect-error gender is a closed set
  await client.patients.create(robot);
  // @ts-expect-error status filters take invoice statuses only
  client.invoices.list({ status: 'paid' });
  const invoice: Invoice = await client.invoices.get('inv_x');
  // @ts-expect-error amounts are numbers
  const total: string = invoice.totalGross;
  void total;
  const billed = await client.encounters.bill('enc_x', { issue: true });
  // @ts-expect-error a bill result has no such field
  void billed.invoiceId;
  // @ts-expect-error the path template must exist in the OpenAPI document
  await client.http.call('get', '/api/v1/nowhere', { creates: false });
  const body = { givenNames: ['A'], lastName: 'B', birthDate: '2000-01-01' };
  // @ts-expect-error creates must say what the operation does: POST /patients takes an Idempotency-Key
  await client.http.call('post', '/api/v1/patients', { body, creates: false });
  const event = client.webhooks.verify('{}', {}, 'whsec_x');
  if (event.type === 'payment.created') {
    const paymentId: string | undefined = event.data.payment?.id;
    void paymentId;
    // @ts-expect-error a payment event carries no claim
    void event.data.claim;
  } else if (event.type === 'claim.status_changed') {
    const status: string | undefined = event.data.claim?.status;
    void status;
  } else {
    // @ts-expect-error an invoice event names only the invoice
    void event.data.payment;
  }
  // @ts-expect-error the event type is a closed set
  if (event.type === 'invoice.paid') return;
}
