// Owns the shapes of practices and their practitioners as the operator API shows them.
import { Type } from 'typebox';
import { EMAIL_PATTERN, explainedPattern } from '../platform/http/patterns.ts';
import { Enum, ListOf, Nullable, Text } from '../platform/http/schema.ts';
import { CURRENCIES, DEFAULT_CURRENCY } from './currencies.ts';
import { DEFAULT_TIME_ZONE, TIME_ZONES } from './time-zones.ts';

const PracticeAddressSchema = Type.Object(
  {
    lines: Type.Array(Text(100), { minItems: 1, maxItems: 4, description: 'Street address, one line each.' }),
    city: Text(100),
    postalCode: Type.String({
      pattern: explainedPattern(
        '^[0-9A-Za-z -]{2,10}$',
        'must be a postal code of 2 to 10 letters or digits',
      ),
    }),
    country: Type.String({
      pattern: explainedPattern(
        '^[A-Z]{2}$',
        'must be a two-letter country code (ISO 3166-1 alpha-2), such as ZA',
      ),
      description: 'ISO 3166-1 alpha-2, such as ZA.',
    }),
  },
  { additionalProperties: false },
);

const BankDetailsSchema = Type.Object(
  {
    bank: Text(100),
    accountName: Text(100),
    accountNumber: Type.String({
      pattern: explainedPattern('^[0-9]{6,16}$', 'must be a bank account number of 6 to 16 digits'),
    }),
    branchCode: Type.String({
      pattern: explainedPattern('^[0-9]{6}$', 'must be a branch code of 6 digits'),
      description: "The bank's six-digit branch code.",
    }),
  },
  { additionalProperties: false },
);

/**
 * What a practice's accounts must show (Medical Schemes Act s59(1), regulation 5 of GN R1262; VAT Act
 * s20(4) when VAT registered): each optional when creating, null to clear when changing.
 */
export const AccountDetailsFields = {
  practiceNumber: Type.Optional(
    Nullable(
      Type.String({
        pattern: explainedPattern('^[0-9]{7}$', 'must be the 7-digit practice code number (PCNS)'),
        description: 'The practice code number (PCNS), 7 digits.',
      }),
    ),
  ),
  groupPracticeNumber: Type.Optional(
    Nullable(
      Type.String({
        pattern: explainedPattern('^[0-9A-Za-z]{1,20}$', 'must be 1 to 20 letters or digits'),
        description: 'The group practice number.',
      }),
    ),
  ),
  vatNumber: Type.Optional(
    Nullable(
      Type.String({
        pattern: explainedPattern('^4[0-9]{9}$', 'must be a VAT number: 10 digits starting with 4'),
        description: 'VAT registration number (10 digits starting with 4); null when not VAT registered.',
      }),
    ),
  ),
  address: Type.Optional(Nullable(PracticeAddressSchema)),
  phone: Type.Optional(
    Nullable(
      Type.String({
        pattern: explainedPattern(
          '^\\+?[0-9 ()-]{7,20}$',
          'must be a phone number of 7 to 20 digits, spaces, brackets or dashes',
        ),
      }),
    ),
  ),
  email: Type.Optional(Nullable(Type.String({ maxLength: 254, pattern: EMAIL_PATTERN }))),
  bankDetails: Type.Optional(Nullable(BankDetailsSchema)),
};

export const PracticeRequest = Type.Object(
  {
    name: Text(200),
    ...AccountDetailsFields,
    currency: Type.Optional(
      Enum(CURRENCIES, {
        default: DEFAULT_CURRENCY,
        description:
          'An ISO 4217 currency in circulation with a minor unit (amounts are integers in it); default ZAR.',
      }),
    ),
    timezone: Type.Optional(
      Enum(TIME_ZONES, {
        default: DEFAULT_TIME_ZONE,
        description: 'IANA time zone (canonical name, or UTC).',
      }),
    ),
  },
  { title: 'PracticeRequest', additionalProperties: false },
);

export const Practice = Type.Object(
  {
    object: Type.Literal('practice'),
    id: Type.String(),
    name: Type.String(),
    currency: Type.String(),
    timezone: Type.String(),
    integrationsEnabled: Type.Boolean(),
    practiceNumber: Nullable(Type.String()),
    groupPracticeNumber: Nullable(Type.String()),
    vatNumber: Nullable(Type.String()),
    address: Nullable(PracticeAddressSchema),
    phone: Nullable(Type.String()),
    email: Nullable(Type.String()),
    bankDetails: Nullable(BankDetailsSchema),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Practice' },
);

/** A change of a practice: the fields given replace theirs, null clears an optional one. */
export const PracticePatch = Type.Object(
  { name: Type.Optional(Text(200)), ...AccountDetailsFields },
  { title: 'PracticePatch', additionalProperties: false, minProperties: 1 },
);

export const IntegrationsRequest = Type.Object({ enabled: Type.Boolean() }, { additionalProperties: false });

export const PractitionerRequest = Type.Object(
  {
    name: Text(200),
    registrationNumber: Type.Optional(Nullable(Text(50))),
    defaultSystems: Type.Optional(
      Type.Object(
        {
          condition: Type.Optional(Nullable(Text(255))),
          procedure: Type.Optional(Nullable(Text(255))),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { title: 'PractitionerRequest', additionalProperties: false },
);

export const Practitioner = Type.Object(
  {
    object: Type.Literal('practitioner'),
    id: Type.String(),
    practiceId: Type.String(),
    name: Type.String(),
    registrationNumber: Nullable(Type.String()),
    defaultSystems: Type.Object({ condition: Type.String(), procedure: Type.String() }),
    active: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'PractitionerRecord', description: "The operator's record of a practitioner." },
);

export const PracticeList = ListOf(Practice, 'PracticeList');
export const PractitionerList = ListOf(Practitioner, 'PractitionerRecordList');

/** The public API's practitioner: the operator's record without the practice id and creation time. */
export const PublicPractitioner = Type.Omit(Practitioner, ['practiceId', 'createdAt'], {
  title: 'Practitioner',
});
export const PublicPractitionerList = ListOf(PublicPractitioner, 'PractitionerList');
