// Owns the Patient resource and PatientRequest shapes: validation, types and OpenAPI in one place.
// Coded fields use the FHIR value sets (DECISIONS: gender, contact point system and use, address
// type and use).
import { type Static, Type } from 'typebox';
import { CalendarDate, Enum, ListOf, Nullable, Text } from '../platform/http/schema.ts';
import { COUNTRY_CODES } from './countries.ts';

export const GENDERS = ['male', 'female', 'other', 'unknown'] as const;
export const CONTACT_SYSTEMS = ['phone', 'fax', 'email', 'pager', 'url', 'sms', 'other'] as const;
export const CONTACT_USES = ['home', 'work', 'temp', 'old', 'mobile'] as const;
export const ADDRESS_TYPES = ['postal', 'physical', 'both'] as const;
export const ADDRESS_USES = ['home', 'work', 'temp', 'old', 'billing'] as const;

const Identifier = Type.Object(
  {
    type: Text(50),
    value: Text(100),
  },
  {
    additionalProperties: false,
    description: 'An identity document or other number, e.g. type `national_id`.',
  },
);

const ExternalId = Type.Object(
  {
    system: Type.String({
      minLength: 1,
      maxLength: 255,
      format: 'uri',
      description: 'A URI chosen by the caller naming its own numbering system (e.g. `urn:acme:mrn`).',
    }),
    value: Type.String({ minLength: 1, maxLength: 100, description: "The practice's own patient number." }),
  },
  { additionalProperties: false },
);

const ContactPoint = Type.Object(
  {
    system: Enum(CONTACT_SYSTEMS),
    value: Text(255),
    use: Type.Optional(Nullable(Enum(CONTACT_USES))),
    rank: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
  },
  { additionalProperties: false },
);

const Address = Type.Object(
  {
    type: Type.Optional(Nullable(Enum(ADDRESS_TYPES))),
    use: Type.Optional(Nullable(Enum(ADDRESS_USES))),
    lines: Type.Optional(Type.Array(Text(200), { maxItems: 5 })),
    city: Type.Optional(Nullable(Text(100))),
    district: Type.Optional(Nullable(Text(100))),
    state: Type.Optional(Nullable(Text(100))),
    postalCode: Type.Optional(Nullable(Text(20))),
    country: Type.Optional(
      Nullable(
        Enum(COUNTRY_CODES, {
          description: 'An officially assigned ISO 3166-1 alpha-2 code, in capitals, e.g. ZA.',
        }),
      ),
    ),
  },
  { additionalProperties: false },
);

const requestProperties = {
  prefix: Type.Optional(Nullable(Text(50))),
  givenNames: Type.Array(Text(100), { minItems: 1, maxItems: 10 }),
  lastName: Text(100),
  gender: Type.Optional(Nullable(Enum(GENDERS))),
  birthDate: CalendarDate,
  identifiers: Type.Optional(Nullable(Type.Array(Identifier, { maxItems: 20 }))),
  externalId: Type.Optional(Nullable(ExternalId)),
  contactPoints: Type.Optional(Nullable(Type.Array(ContactPoint, { maxItems: 20 }))),
  addresses: Type.Optional(Nullable(Type.Array(Address, { maxItems: 10 }))),
};

export const PatientRequest = Type.Object(requestProperties, {
  title: 'PatientRequest',
  additionalProperties: false,
});
export type PatientRequest = Static<typeof PatientRequest>;

/** PATCH body: a JSON merge patch (RFC 7396) of PatientRequest; every field optional. */
export const PatientPatch = Type.Object(
  {
    prefix: requestProperties.prefix,
    givenNames: Type.Optional(requestProperties.givenNames),
    lastName: Type.Optional(requestProperties.lastName),
    gender: requestProperties.gender,
    birthDate: Type.Optional(CalendarDate),
    identifiers: requestProperties.identifiers,
    externalId: Type.Optional(
      Nullable(
        Type.Object(
          {
            system: Type.Optional(ExternalId.properties.system),
            value: Type.Optional(ExternalId.properties.value),
          },
          {
            additionalProperties: false,
            description:
              'Merged into the stored externalId: the result needs both `system` and `value`, else 422 names the missing one.',
          },
        ),
      ),
    ),
    contactPoints: requestProperties.contactPoints,
    addresses: requestProperties.addresses,
  },
  { title: 'PatientPatch', additionalProperties: false },
);
export type PatientPatch = Static<typeof PatientPatch>;

export const Patient = Type.Object(
  {
    object: Type.Literal('patient'),
    id: Type.String(),
    active: Type.Boolean(),
    prefix: Nullable(Type.String()),
    givenNames: Type.Array(Type.String()),
    lastName: Nullable(Type.String()),
    gender: Nullable(Type.String()),
    birthDate: Nullable(Type.String({ format: 'date' })),
    identifiers: Type.Array(Type.Object({ type: Type.String(), value: Type.String() })),
    externalId: Nullable(Type.Object({ system: Type.String(), value: Type.String() })),
    contactPoints: Type.Array(
      Type.Object({
        system: Type.String(),
        value: Type.String(),
        use: Nullable(Type.String()),
        rank: Nullable(Type.Integer()),
      }),
    ),
    addresses: Type.Array(
      Type.Object({
        type: Nullable(Type.String()),
        use: Nullable(Type.String()),
        lines: Type.Array(Type.String()),
        city: Nullable(Type.String()),
        district: Nullable(Type.String()),
        state: Nullable(Type.String()),
        postalCode: Nullable(Type.String()),
        country: Nullable(Type.String()),
      }),
    ),
    organizationId: Nullable(Type.String({ description: 'The practice managing the patient.' })),
    updatedAt: Type.String({ format: 'date-time' }),
    erased: Type.Optional(
      Type.Literal(true, {
        description:
          'Present once the patient is de-identified (retention ended, or erased on request): the personal fields are then empty and only `birthYear` remains.',
      }),
    ),
    birthYear: Type.Optional(Type.Integer({ description: "An erased patient's year of birth." })),
  },
  { title: 'Patient' },
);
export type Patient = Static<typeof Patient>;

export const PatientList = ListOf(Patient, 'PatientList');
