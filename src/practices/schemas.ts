// Owns the shapes of practices and their practitioners as the operator API shows them.
import { Type } from 'typebox';
import { Enum, ListOf, Nullable, Text } from '../platform/http/schema.ts';
import { CURRENCIES, DEFAULT_CURRENCY } from './currencies.ts';
import { DEFAULT_TIME_ZONE, TIME_ZONES } from './time-zones.ts';

export const PracticeRequest = Type.Object(
  {
    name: Text(200),
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
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Practice' },
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
