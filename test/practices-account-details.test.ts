import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { refusedWith } from './billing-fixtures.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

const DETAILS = {
  practiceNumber: '0123456',
  groupPracticeNumber: 'G1234',
  vatNumber: '4123456789',
  address: { lines: ['1 Long Street'], city: 'Cape Town', postalCode: '8001', country: 'ZA' },
  phone: '+27 21 555 0199',
  email: 'accounts@practice.example',
  bankDetails: {
    bank: 'Example Bank',
    accountName: 'Practice',
    accountNumber: '1234567890',
    branchCode: '250655',
  },
};

describeEachBackend('practice account details', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('set on create, answered on read, changed and cleared with PATCH', async () => {
    const created = await svc.admin('POST', '/practices', { name: 'Details', ...DETAILS });
    assert.equal(created.status, 201, created.text);
    const id = created.body.id as string;
    const read = await svc.admin('GET', `/practices/${id}`);
    assert.equal(read.status, 200, read.text);
    for (const [field, value] of Object.entries(DETAILS)) assert.deepEqual(read.body[field], value, field);
    const patched = await svc.admin('PATCH', `/practices/${id}`, { vatNumber: null, phone: '021 555 0100' });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.vatNumber, null);
    assert.equal(patched.body.phone, '021 555 0100');
    assert.equal(patched.body.practiceNumber, '0123456');
    assert.deepEqual(patched.body.address, DETAILS.address);
    const again = await svc.admin('GET', `/practices/${id}`);
    assert.equal(again.body.vatNumber, null);
    assert.equal(again.body.name, 'Details');
  });

  test('a practice created without details answers them null', async () => {
    const created = await svc.admin('POST', '/practices', { name: 'Bare' });
    assert.equal(created.status, 201, created.text);
    for (const field of Object.keys(DETAILS)) assert.equal(created.body[field], null, field);
  });

  test('each wrong field is named in one Problem', async () => {
    const created = await svc.admin('POST', '/practices', {
      name: 'Wrong',
      practiceNumber: '123',
      vatNumber: '5123456789',
      email: 'not an address',
      address: { lines: [], city: 'Cape Town', postalCode: '8001', country: 'South Africa' },
      bankDetails: { bank: 'B', accountName: 'A', accountNumber: 'x', branchCode: '1' },
    });
    // Each wrong field once, by its own name: the nested fields, not their objects again.
    refusedWith(created, 422, 'validation_failed', [
      'address.country',
      'address.lines',
      'bankDetails.accountNumber',
      'bankDetails.branchCode',
      'email',
      'practiceNumber',
      'vatNumber',
    ]);
    assert.match(created.body.detail, /vatNumber/);
    const vat = (created.body.errors as Array<{ field: string; message: string }>).find(
      (e) => e.field === 'vatNumber',
    );
    assert.equal(vat?.message, 'vatNumber must be a VAT number: 10 digits starting with 4');
    const bare = await svc.admin('POST', '/practices', { name: 'Target' });
    const patched = await svc.admin('PATCH', `/practices/${bare.body.id}`, { practiceNumber: '12345678' });
    refusedWith(patched, 422, 'validation_failed', ['practiceNumber']);
    const unknown = await svc.admin('PATCH', '/practices/org_nope', { phone: '021 555 0100' });
    assert.equal(unknown.status, 404);
  });
});
