// Owns what each A/B scenario sends: the same requests, built the same way, to the service and to the
// baseline (which serves the same paths). Ids come from the loaded set; creates get a fresh
// Idempotency-Key and a unique externalId each; invoice pages carry a cursor the target itself issued.
import { randomBytes } from 'node:crypto';
import type autocannon from 'autocannon';
import { patientBody } from './seed-api.ts';

export interface Scenario {
  key: string;
  title: string;
  /** Requests for one autocannon run against one target. */
  requests(target: 'service' | 'baseline'): autocannon.Request[];
}

function pick<T>(items: T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}

function auth(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

export function getPatient(key: string, patientIds: string[]): Scenario {
  return {
    key: 'get_patient',
    title: 'GET /patients/{id}',
    requests: () => [
      {
        method: 'GET',
        headers: auth(key),
        setupRequest: (request) => ({ ...request, path: `/api/v1/patients/${pick(patientIds)}` }),
      },
    ],
  };
}

export function createPatient(key: string): Scenario {
  return {
    key: 'post_patient',
    title: 'POST /patients',
    requests: (target) => {
      const prefix = `${target}-${randomBytes(4).toString('hex')}`;
      let counter = 0;
      return [
        {
          method: 'POST',
          path: '/api/v1/patients',
          setupRequest: (request) => {
            counter += 1;
            return {
              ...request,
              headers: {
                ...auth(key),
                'content-type': 'application/json',
                'idempotency-key': `${prefix}-${counter}`,
              },
              body: JSON.stringify(patientBody(`${prefix}-${counter}`)),
            };
          },
        },
      ];
    },
  };
}

export function findPatient(key: string, system: string, externalValues: string[]): Scenario {
  return {
    key: 'find_patient',
    title: 'GET /patients?externalSystem&externalId',
    requests: () => [
      {
        method: 'GET',
        headers: auth(key),
        setupRequest: (request) => ({
          ...request,
          path: `/api/v1/patients?externalSystem=${encodeURIComponent(system)}&externalId=${encodeURIComponent(pick(externalValues))}`,
        }),
      },
    ],
  };
}

/** A second-page request: updatedSince and the cursor the target answered for its first page. */
export interface PageStart {
  updatedSince: string;
  cursor: string;
}

export function invoicePages(
  key: string,
  label: string,
  pages: Record<'service' | 'baseline', PageStart[]>,
): Scenario {
  return {
    key: `invoice_page_${label}`,
    title: `GET /invoices?updatedSince&cursor (${label} invoices)`,
    requests: (target) => [
      {
        method: 'GET',
        headers: auth(key),
        setupRequest: (request) => {
          const page = pick(pages[target]);
          return {
            ...request,
            path: `/api/v1/invoices?updatedSince=${encodeURIComponent(page.updatedSince)}&cursor=${encodeURIComponent(page.cursor)}`,
          };
        },
      },
    ],
  };
}
