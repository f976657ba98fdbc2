// Owns the embedded sandbox's first start: a demo practice with a practitioner, a client holding every
// permission and its key, so an integrator can call the API at once. The sandbox keeps its admin
// token and demo key in DATA_DIR/sandbox-credentials.json (mode 0600) so a restart can show them again;
// the database itself stores only hashes. Never used with PostgreSQL.
import fs from 'node:fs';
import path from 'node:path';
import { PERMISSIONS } from './auth/permissions.ts';
import { createClient, issueKey } from './clients/service.ts';
import type { Database } from './platform/db/database.ts';
import { asOperator } from './platform/db/transaction.ts';
import { randomSecret } from './platform/ids.ts';
import { createPractice, createPractitioner } from './practices/service.ts';
import { findPractice } from './practices/store.ts';

export interface SandboxCredentials {
  adminToken: string;
  practiceId: string;
  practitionerId: string;
  clientId: string;
  apiKey: string;
}

const FILE_NAME = 'sandbox-credentials.json';

function readCredentials(dataDir: string): Partial<SandboxCredentials> | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, FILE_NAME), 'utf8')) as Partial<SandboxCredentials>;
  } catch {
    return undefined;
  }
}

function writeCredentials(dataDir: string, credentials: SandboxCredentials): void {
  // Written aside and renamed: a crash mid-write must not leave a torn file (the next start would
  // then seed a second demo practice and a new admin token), and the new file always gets mode 0600.
  const file = path.join(dataDir, FILE_NAME);
  fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(`${file}.tmp`, file);
}

/** The demo practice: fictional but well-formed account details, so its accounts show every item. */
export const DEMO_PRACTICE = {
  name: 'Demo Family Practice',
  practiceNumber: '0123456',
  vatNumber: null,
  address: { lines: ['12 Example Street', 'Gardens'], city: 'Cape Town', postalCode: '8001', country: 'ZA' },
  phone: '+27 21 555 0100',
  email: 'accounts@demo-practice.example',
  bankDetails: {
    bank: 'Example Bank',
    accountName: 'Demo Family Practice',
    accountNumber: '0012345678',
    branchCode: '250655',
  },
};

/** Seeds the demo practice once; later starts find it and reuse the stored credentials. */
export async function ensureSandbox(
  db: Database,
  dataDir: string,
  adminTokenFromEnv: string | undefined,
): Promise<SandboxCredentials> {
  const stored = readCredentials(dataDir);
  const adminToken = adminTokenFromEnv ?? stored?.adminToken ?? `adm_${randomSecret(32)}`;
  if (stored?.practiceId && stored.apiKey && stored.clientId && stored.practitionerId) {
    const exists = await asOperator(db, (trx) => findPractice(trx, stored.practiceId!));
    if (exists) {
      const credentials = { ...(stored as SandboxCredentials), adminToken };
      writeCredentials(dataDir, credentials);
      return credentials;
    }
  }
  const credentials = await asOperator(db, async (trx) => {
    const now = new Date();
    const practice = await createPractice(trx, DEMO_PRACTICE, now);
    const practitioner = await createPractitioner(
      trx,
      practice.id,
      { name: 'Dr Thandi Nkosi', registrationNumber: 'MP0123456' },
      now,
    );
    const client = await createClient(
      trx,
      practice.id,
      { name: 'Sandbox integration', permissions: [...PERMISSIONS] },
      now,
    );
    const { key } = await issueKey(trx, client.id, { createdBy: 'sandbox' }, now);
    return {
      adminToken,
      practiceId: practice.id,
      practitionerId: practitioner.id,
      clientId: client.id,
      apiKey: key,
    };
  });
  writeCredentials(dataDir, credentials);
  return credentials;
}
