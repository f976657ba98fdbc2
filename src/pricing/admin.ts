// Owns practice prices and practitioner favourites, kept by the operator: the prices the billing
// rates come from (a practitioner's favourite first, then the practice's own price). Setting a price
// again for the same code and practitioner replaces its amount.
import type { Selectable } from 'kysely';
import { type Static, Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import type { PracticePricesTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { wholeList } from '../platform/http/cursor.ts';
import { type FieldError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { ListOf, Nullable } from '../platform/http/schema.ts';
import { getPractice } from '../practices/service.ts';
import { deletePrice, listPrices, practitionerExists, resolveCodes, upsertPrice } from './service.ts';

export const PriceRequest = Type.Object(
  {
    system: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Code system url, e.g. urn:service:codesystem:tariff.',
    }),
    code: Type.String({ minLength: 1, maxLength: 64 }),
    amount: Type.Integer({
      minimum: 0,
      maximum: 1_000_000_000,
      description: "Minor units of the practice's currency.",
    }),
    practitionerId: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description: "With it, the practitioner's favourite price.",
        }),
      ),
    ),
  },
  { title: 'PriceRequest', additionalProperties: false },
);

export const Price = Type.Object(
  {
    object: Type.Literal('price'),
    id: Type.String(),
    practiceId: Type.String(),
    system: Type.String(),
    code: Type.String(),
    amount: Type.Integer(),
    currency: Type.String(),
    practitionerId: Nullable(Type.String()),
    kind: Type.Union([Type.Literal('practice'), Type.Literal('favorite')]),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Price' },
);

function priceOf(row: Selectable<PracticePricesTable>, currency: string): Static<typeof Price> {
  return {
    object: 'price',
    id: row.id,
    practiceId: row.practice_id,
    system: row.system,
    code: row.code,
    amount: Number(row.amount),
    currency,
    practitionerId: row.practitioner_id,
    kind: row.practitioner_id ? 'favorite' : 'practice',
    updatedAt: row.updated_at.toISOString(),
  };
}

async function setPrice(trx: Trx, practiceId: string, request: Static<typeof PriceRequest>, now: Date) {
  const practice = await getPractice(trx, practiceId);
  const errors: FieldError[] = [];
  const found = await resolveCodes(trx, practiceId, [{ system: request.system, code: request.code }]);
  if (!found.has(`${request.system}|${request.code}`)) {
    errors.push({ field: 'code', code: 'invalid', message: `code is not a code of ${request.system}` });
  }
  if (request.practitionerId) {
    if (!(await practitionerExists(trx, practiceId, request.practitionerId)))
      errors.push({
        field: 'practitionerId',
        code: 'invalid',
        message: 'practitionerId is not a practitioner of this practice',
      });
  }
  if (errors.length > 0) throw fieldErrors(errors);
  const row = await upsertPrice(
    trx,
    practiceId,
    {
      system: request.system,
      code: request.code,
      amount: request.amount,
      practitionerId: request.practitionerId ?? null,
    },
    now,
  );
  return priceOf(row, practice.currency);
}

const PracticeParam = Type.Object(
  { practiceId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

export const priceAdminRoutes = [
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/prices',
    operationId: 'adminSetPrice',
    cli: { command: 'prices set' },
    summary: 'Set a practice price, or a practitioner favourite',
    description:
      "Without practitionerId: the practice's own price for the code (rate source `practice`, pricingSource `custom`). With it: that practitioner's favourite (source `practitioner`, pricingSource `favorite`). Setting it again replaces the amount.",
    params: PracticeParam,
    body: PriceRequest,
    successStatus: 201,
    response: Price,
    handler: async ({ trx, params, body, now }) => {
      const price = await setPrice(trx, params.practiceId, body, now);
      return {
        body: price,
        audit: { practiceId: params.practiceId, resourceType: 'price', resourceId: price.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/prices',
    operationId: 'adminListPrices',
    cli: { command: 'prices list' },
    summary: "List a practice's prices and favourites",
    params: PracticeParam,
    successStatus: 200,
    response: ListOf(Price, 'PriceList'),
    handler: async ({ trx, params }) => {
      const practice = await getPractice(trx, params.practiceId);
      const rows = await listPrices(trx, params.practiceId);
      return {
        body: wholeList(rows.map((r) => priceOf(r, practice.currency))),
      };
    },
  }),
  defineAdminRoute({
    method: 'DELETE',
    url: '/practices/:practiceId/prices/:priceId',
    operationId: 'adminDeletePrice',
    cli: { command: 'prices delete' },
    summary: 'Delete a practice price or favourite',
    params: Type.Object(
      {
        practiceId: Type.String({ minLength: 1, maxLength: 100 }),
        priceId: Type.String({ minLength: 1, maxLength: 100 }),
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: Type.Object({ object: Type.Literal('price'), id: Type.String(), deleted: Type.Literal(true) }),
    handler: async ({ trx, params }) => {
      if (!(await deletePrice(trx, params.practiceId, params.priceId))) throw notFound('Price');
      return {
        body: { object: 'price' as const, id: params.priceId, deleted: true as const },
        audit: { practiceId: params.practiceId, resourceType: 'price', resourceId: params.priceId },
      };
    },
  }),
];
