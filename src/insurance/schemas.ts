// Owns the InsurancePlan and Coverage shapes.
import { type Static, Type } from 'typebox';
import { CalendarDate, ListOf, Nullable } from '../platform/http/schema.ts';

export const InsurancePlan = Type.Object(
  {
    object: Type.Literal('insurance_plan'),
    id: Type.String(),
    name: Type.String(),
    aliases: Type.Array(Type.String()),
    active: Type.Boolean({ description: 'false once no longer offered.' }),
    optionCode: Nullable(Type.String()),
    insurerId: Nullable(Type.String({ description: 'The medical scheme.' })),
    insurerName: Nullable(Type.String()),
  },
  { title: 'InsurancePlan' },
);
export type InsurancePlan = Static<typeof InsurancePlan>;
export const InsurancePlanList = ListOf(InsurancePlan, 'InsurancePlanList');

export const CoverageRequest = Type.Object(
  {
    planId: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'An insurance plan id from GET /insurance-plans.',
    }),
    memberNumber: Type.String({
      minLength: 1,
      maxLength: 30,
      description: "The member's number on the scheme.",
    }),
    dependentCode: Type.Optional(
      Nullable(Type.String({ minLength: 1, maxLength: 10, description: 'e.g. 00 for the main member.' })),
    ),
    memberSurname: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description:
            "The main member's surname, when the patient is a dependant; with dependant code 00, or none, the member is the patient.",
        }),
      ),
    ),
    memberInitials: Type.Optional(
      Nullable(
        Type.String({
          pattern: '^[\\p{L}. ]{1,10}$',
          description: "The main member's initials, when the patient is a dependant (such as `T.M.`).",
        }),
      ),
    ),
    startDate: Type.Optional(Nullable(CalendarDate)),
    endDate: Type.Optional(Nullable(CalendarDate)),
  },
  { title: 'CoverageRequest', additionalProperties: false },
);
export type CoverageRequest = Static<typeof CoverageRequest>;

export const Coverage = Type.Object(
  {
    object: Type.Literal('coverage'),
    id: Type.String(),
    patientId: Type.String(),
    planId: Type.String(),
    memberNumber: Type.String(),
    dependentCode: Nullable(Type.String()),
    memberSurname: Nullable(
      Type.String({ description: "The main member's surname; null when the patient is the member." }),
    ),
    memberInitials: Nullable(Type.String()),
    active: Type.Boolean({
      description:
        "True while the plan is offered and today (in the practice's time zone) lies within startDate..endDate.",
    }),
    startDate: Nullable(Type.String({ format: 'date' })),
    endDate: Nullable(Type.String({ format: 'date' })),
  },
  { title: 'Coverage' },
);
export type Coverage = Static<typeof Coverage>;
export const CoverageList = ListOf(Coverage, 'CoverageList');
