// Owns the Practitioner shape of the public API: what an integrator needs to name the practitioner of
// a visit (its id) and to know which code systems its codes default to.
import { Type } from 'typebox';
import { Practitioner as AdminPractitioner } from '../admin/schemas.ts';
import { ListOf } from '../platform/http/schema.ts';

export const Practitioner = Type.Omit(AdminPractitioner, ['practiceId', 'createdAt'], {
  title: 'Practitioner',
});
export const PractitionerList = ListOf(Practitioner, 'PractitionerList');
