// Owns the Encounter resource and EncounterRequest shapes.
import { type Static, Type } from 'typebox';
import { OffsetDateTime } from '../platform/http/date-time.ts';
import { Enum, ListOf, Nullable } from '../platform/http/schema.ts';

export const ENCOUNTER_STATUSES = [
  'planned',
  'arrived',
  'in_progress',
  'processing',
  'review',
  'finalizing',
  'locked',
  'on_hold',
  'discharged',
  'completed',
  'cancelled',
  'discontinued',
  'entered_in_error',
  'error',
  'unknown',
] as const;
export const ENCOUNTER_CLASSES = ['imp', 'amb', 'obsenc', 'emer', 'vr', 'hh'] as const;
export const PROCEDURE_STATUSES = [
  'preparation',
  'in_progress',
  'not_done',
  'on_hold',
  'stopped',
  'completed',
  'entered_in_error',
] as const;

const Coding = {
  system: Type.Optional(
    Nullable(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description:
          "Code system url; when left out, the practitioner's default system for this kind of code.",
      }),
    ),
  ),
  code: Type.String({ minLength: 1, maxLength: 40 }),
  display: Type.Optional(
    Nullable(
      Type.String({
        description: "Ignored, whatever its length: the service records the code system's own wording.",
      }),
    ),
  ),
};

export const EncounterRequest = Type.Object(
  {
    status: Type.Optional(Enum(['completed'], { description: 'Only `completed`; the default.' })),
    patientId: Type.String({ minLength: 1, maxLength: 100 }),
    practitionerId: Type.String({ minLength: 1, maxLength: 100 }),
    start: OffsetDateTime('Returned in UTC.'),
    end: OffsetDateTime('Returned in UTC.'),
    diagnoses: Type.Array(Type.Object(Coding, { additionalProperties: false }), {
      minItems: 1,
      maxItems: 12,
      description: 'Ordered by importance; the first is the primary diagnosis.',
    }),
    procedures: Type.Array(
      Type.Object(
        {
          ...Coding,
          diagnosisCodes: Type.Optional(
            Nullable(
              Type.Array(Type.String({ minLength: 1, maxLength: 40 }), {
                maxItems: 12,
                description:
                  "Codes from this request's diagnoses the procedure was done for; the first is primary on the claim.",
              }),
            ),
          ),
          note: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 40 },
    ),
  },
  { title: 'EncounterRequest', additionalProperties: false },
);
export type EncounterRequest = Static<typeof EncounterRequest>;

export const Encounter = Type.Object(
  {
    object: Type.Literal('encounter'),
    id: Type.String(),
    status: Enum(ENCOUNTER_STATUSES),
    class: Enum(ENCOUNTER_CLASSES, {
      description: 'amb is an outpatient visit (what POST /encounters records).',
    }),
    patientId: Type.String(),
    practitionerId: Nullable(Type.String()),
    start: Type.String({ format: 'date-time' }),
    end: Nullable(Type.String({ format: 'date-time' })),
    diagnoses: Type.Array(
      Type.Object({
        id: Type.String(),
        system: Nullable(Type.String()),
        code: Type.String(),
        display: Nullable(Type.String()),
      }),
    ),
    procedures: Type.Array(
      Type.Object({
        id: Type.String(),
        status: Enum(PROCEDURE_STATUSES),
        system: Nullable(Type.String()),
        code: Type.String(),
        display: Nullable(Type.String()),
        diagnosisCodes: Type.Array(Type.String()),
        note: Nullable(Type.String()),
      }),
    ),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Encounter' },
);
export type Encounter = Static<typeof Encounter>;
export const EncounterList = ListOf(Encounter, 'EncounterList');
