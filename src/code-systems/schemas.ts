// Owns the CodeSystem and CodeConcept shapes and their requests.
import { type Static, Type } from 'typebox';
import { explainedPattern } from '../platform/http/patterns.ts';
import { Enum, ListOf, Nullable } from '../platform/http/schema.ts';

export const USAGES = [
  'procedure',
  'condition',
  'observation',
  'medication',
  'allergy',
  'immunization',
  'family-history',
  'body-site',
  'severity',
] as const;

export const Usage = Enum(USAGES, { description: 'Kind of record the codes are picked for.' });

/**
 * A name makes the system's url from its letters and digits (slugOf in ./service.ts keeps ASCII ones),
 * so it needs one.
 */
export const SYSTEM_NAME_PATTERN = explainedPattern(
  '[A-Za-z0-9]',
  'must contain at least one letter or digit (A-Z, a-z, 0-9): they make the url',
);

export const CodeSystemRequest = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 60,
      pattern: SYSTEM_NAME_PATTERN,
      description:
        'Makes the url (`urn:service:organization:<practice id>:codesystem:<slug of name>`), so it cannot change.',
    }),
    title: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    usage: Type.Array(Usage, { minItems: 1, maxItems: 9, uniqueItems: true }),
  },
  { title: 'CodeSystemRequest', additionalProperties: false },
);
export type CodeSystemRequest = Static<typeof CodeSystemRequest>;

export const CodeSystem = Type.Object(
  {
    object: Type.Literal('code_system'),
    id: Type.String(),
    url: Type.String({ description: 'What a coding names as its `system`.' }),
    name: Type.String(),
    title: Nullable(Type.String()),
    description: Nullable(Type.String()),
    owner: Enum(['service', 'practice', 'practitioner'], {
      description: 'service = a published system; only a practice-owned system can be changed.',
    }),
    usage: Type.Array(Type.String()),
    status: Enum(['active', 'retired']),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'CodeSystem' },
);
export type CodeSystem = Static<typeof CodeSystem>;
export const CodeSystemList = ListOf(CodeSystem, 'CodeSystemList');

export const CodeConceptRequest = Type.Object(
  {
    code: Type.String({
      pattern: '^[A-Za-z0-9._-]{1,32}$',
      description: '1 to 32 letters, digits, dots, underscores, hyphens.',
    }),
    display: Type.String({ minLength: 1, maxLength: 500 }),
    definition: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    usage: Type.Optional(Nullable(Type.Array(Usage, { maxItems: 9, uniqueItems: true }))),
    defaultPrice: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 0,
          maximum: 1_000_000_000,
          description: "Minor units of the practice's currency.",
        }),
      ),
    ),
  },
  { title: 'CodeConceptRequest', additionalProperties: false },
);
export type CodeConceptRequest = Static<typeof CodeConceptRequest>;

export const CodeConcept = Type.Object(
  {
    object: Type.Literal('code_concept'),
    id: Type.String(),
    codeSystemId: Type.String(),
    system: Type.String({ description: "The system's url." }),
    code: Type.String(),
    display: Type.String(),
    definition: Nullable(Type.String()),
    usage: Type.Array(Type.String()),
    defaultPrice: Nullable(Type.Integer()),
    currency: Nullable(Type.String()),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'CodeConcept' },
);
export type CodeConcept = Static<typeof CodeConcept>;
export const CodeConceptList = ListOf(CodeConcept, 'CodeConceptList');

export const DeletedCodeConcept = Type.Object(
  { object: Type.Literal('code_concept'), id: Type.String(), deleted: Type.Literal(true) },
  { title: 'DeletedCodeConcept' },
);

export const Modifier = Type.Object(
  {
    object: Type.Literal('modifier'),
    system: Type.String({ description: 'The code system the modifier belongs to (its url).' }),
    code: Type.String({ description: "Send it in a line's `modifiers`." }),
    display: Type.String(),
    percentBasisPoints: Type.Integer({
      description:
        "How the modifier changes a line's total, in basis points of its subtotal: 2500 adds 25%, -5000 takes half off. A line's modifiers are summed.",
    }),
  },
  { title: 'Modifier' },
);
export const ModifierList = ListOf(Modifier, 'ModifierList');
