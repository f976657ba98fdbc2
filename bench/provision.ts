// Owns setting up the service for a run through its operator (admin) API, as an operator would: a
// practice, a practitioner, a client holding every permission with a very high rate limit, its API
// key, and (for the claim pipeline) a webhook endpoint pointing at the bench's local receiver.
import { PERMISSIONS } from '../src/auth/permissions.ts';
import { expect } from './api.ts';

export interface Practice {
  practiceId: string;
  practitionerId: string;
  clientId: string;
  key: string;
}

/** The highest rate limit the admin API accepts, so the limiter never refuses the load. */
export const RATE_LIMIT_PER_MINUTE = 10_000_000;

export async function provisionPractice(baseUrl: string, adminToken: string): Promise<Practice> {
  const admin = (method: string, path: string, body: unknown) =>
    expect(201, baseUrl, method, `/admin/v1${path}`, { token: adminToken, body });
  const practice = await admin('POST', '/practices', { name: 'Bench Practice' });
  const practiceId = practice.body.id as string;
  const practitioner = await admin('POST', `/practices/${practiceId}/practitioners`, {
    name: 'Dr Bench',
    registrationNumber: 'MP0000001',
  });
  const client = await admin('POST', `/practices/${practiceId}/clients`, {
    name: 'Bench client',
    permissions: [...PERMISSIONS],
    rateLimitPerMinute: RATE_LIMIT_PER_MINUTE,
  });
  const key = await admin('POST', `/clients/${client.body.id}/keys`, {});
  return {
    practiceId,
    practitionerId: practitioner.body.id as string,
    clientId: client.body.id as string,
    key: key.body.key as string,
  };
}

export async function registerWebhook(
  baseUrl: string,
  adminToken: string,
  practiceId: string,
  url: string,
): Promise<string> {
  const endpoint = await expect(201, baseUrl, 'POST', `/admin/v1/practices/${practiceId}/webhook-endpoints`, {
    token: adminToken,
    body: { url, eventTypes: ['claim.status_changed'] },
  });
  return endpoint.body.id as string;
}
