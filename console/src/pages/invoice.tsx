// One invoice: its lines with where each price came from, payments and refunds, its claim line by line with each
// decision and reason, the patient's coverages, the events about it and their webhook deliveries, and
// the actions that fix and send it.
import { useEffect, useState } from 'preact/hooks';
import { ActionKey } from '../api.ts';
import {
  Action,
  ActionForm,
  Field,
  Loading,
  Notice,
  Status,
  useConsole,
  useLoad,
} from '../components/ui.tsx';
import { saveFile } from '../download.ts';
import { dateTime, money, words } from '../format.ts';
import { href } from '../router.ts';
import type { Claim, InvoiceDetail } from '../types.ts';

const IN_FLIGHT = ['submitting', 'reversing'];
const EDITABLE = ['draft', 'amending'];
const OPEN = ['issued', 'partially_paid', 'overdue'];
/** Statuses the service reopens for changes (it refuses while the claim is not settled). */
const AMENDABLE = [...OPEN, 'balanced'];
/** Statuses that take a refund, while something the patient paid is left to give back. */
const REFUNDABLE = ['issued', 'partially_paid', 'overdue', 'balanced', 'amending'];
/**
 * Statuses the service may cancel or mark entered in error (it refuses when a payment or claim stands
 * in the way); balanced only for an invoice for 0, nothing paid.
 */
const CLOSABLE = ['draft', 'amending', 'issued', 'overdue', 'balanced'];

/** Saves `value` as a JSON file named `name` through the browser's own download. */
function download(name: string, value: unknown): void {
  const url = URL.createObjectURL(new Blob([JSON.stringify(value, null, 2)], { type: 'application/json' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

export function InvoicePage({ invoiceId }: { invoiceId: string }) {
  const { api, practiceId } = useConsole();
  const loaded = useLoad(() => api.invoice(practiceId, invoiceId), [practiceId, invoiceId]);
  const claimStatus = loaded.data?.claim?.status;
  // While the insurer has not answered, look again every second.
  useEffect(() => {
    if (!claimStatus || !IN_FLIGHT.includes(claimStatus)) return;
    const timer = setTimeout(loaded.reload, 1000);
    return () => clearTimeout(timer);
  }, [claimStatus, loaded.data]);
  return (
    <section aria-labelledby="invoice-title">
      <p>
        <a href={href('invoices')}>← Invoices</a>
      </p>
      <Loading loaded={loaded}>{(detail) => <InvoiceView detail={detail} reload={loaded.reload} />}</Loading>
    </section>
  );
}

function InvoiceView({ detail, reload }: { detail: InvoiceDetail; reload: () => void }) {
  const { api, practiceId } = useConsole();
  const { invoice, claim } = detail;
  const fmt = (v: number | null) => (v === null ? '—' : money(v, invoice.currency));
  return (
    <>
      <h1 id="invoice-title">
        Invoice {invoice.number} <Status value={invoice.status} />
      </h1>
      <dl class="facts">
        <div>
          <dt>Patient</dt>
          <dd>
            {detail.patient.name} <small class="muted">{detail.patient.id}</small>{' '}
            <Action
              label="Download the patient's record"
              run={() => api.patientRecord(practiceId, detail.patient.id)}
              done={(record) => download(`${detail.patient.id}-record.json`, record)}
            />
          </dd>
        </div>
        <div>
          <dt>Date</dt>
          <dd>{invoice.date}</dd>
        </div>
        <div>
          <dt>Due</dt>
          <dd>{invoice.dueDate ?? '—'}</dd>
        </div>
        <div>
          <dt>Total</dt>
          <dd>{fmt(invoice.totalGross)}</dd>
        </div>
        <div>
          <dt>Paid</dt>
          <dd>{fmt(invoice.amountPaid)}</dd>
        </div>
        <div>
          <dt>Balance due</dt>
          <dd>{fmt(invoice.balanceDue)}</dd>
        </div>
        {invoice.creditDue !== 0 && (
          <div>
            <dt>Credit due to the patient</dt>
            <dd>{fmt(invoice.creditDue)}</dd>
          </div>
        )}
        {invoice.amountWrittenOff !== 0 && (
          <div>
            <dt>Written off</dt>
            <dd>{fmt(invoice.amountWrittenOff)}</dd>
          </div>
        )}
        <div>
          <dt>Claim</dt>
          <dd>
            <Status value={invoice.claimStatus} />
          </dd>
        </div>
      </dl>

      <InvoiceActions detail={detail} reload={reload} />
      <PatientToldSection detail={detail} />

      <h2>Lines</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Service date</th>
            <th scope="col">Code</th>
            <th scope="col">Description</th>
            <th scope="col">Diagnoses</th>
            <th scope="col" class="number">
              Qty
            </th>
            <th scope="col" class="number">
              Unit price
            </th>
            <th scope="col" class="number">
              Total
            </th>
            <th scope="col">Pricing source</th>
          </tr>
        </thead>
        <tbody>
          {invoice.lineItems.map((l, i) => (
            <tr key={l.id}>
              <td>{i + 1}</td>
              <td>{l.serviceDate}</td>
              <td>{l.code}</td>
              <td>{l.description}</td>
              <td>{l.diagnoses.map((d) => (d.primary ? `${d.code} (primary)` : d.code)).join(', ')}</td>
              <td class="number">{l.quantity}</td>
              <td class="number">{fmt(l.unitPrice)}</td>
              <td class="number">{fmt(l.total)}</td>
              <td>{words(l.pricingSource ?? 'manual')}</td>
            </tr>
          ))}
        </tbody>
      </table>

      <ClaimSection claim={claim} detail={detail} fmt={fmt} />
      <CoverageSection detail={detail} reload={reload} />

      <h2>Payments</h2>
      <MoneyTable
        rows={detail.payments}
        none="No payment yet."
        columns={['Received', 'From', 'Method', 'Reference']}
        cells={(p) => [dateTime(p.receivedAt), p.source, p.method, p.reference ?? '—']}
        fmt={fmt}
      />

      <h2>Refunds</h2>
      <MoneyTable
        rows={detail.refunds}
        none="No refund."
        columns={['Given back', 'Method', 'Reference', 'Reason']}
        cells={(r) => [dateTime(r.refundedAt), r.method, r.reference ?? '—', r.reason]}
        fmt={fmt}
      />

      <EventsSection detail={detail} reload={reload} />
    </>
  );
}

/** Money moved on the invoice (payments or refunds), one row each with its amount last; `none` when there is none. */
function MoneyTable<T extends { id: string; amount: number }>({
  rows,
  none,
  columns,
  cells,
  fmt,
}: {
  rows: T[];
  none: string;
  columns: string[];
  cells: (row: T) => string[];
  fmt: (v: number | null) => string;
}) {
  if (rows.length === 0) return <p>{none}</p>;
  return (
    <table>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c} scope="col">
              {c}
            </th>
          ))}
          <th scope="col" class="number">
            Amount
          </th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.id}>
            {cells(row).map((cell, i) => (
              <td key={columns[i]}>{cell}</td>
            ))}
            <td class="number">{fmt(row.amount)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The amount (in major units, as typed) and the method of money received or given back. */
function AmountAndMethod({
  labels,
  value,
  onChange,
}: {
  labels: [amount: string, method: string];
  value: { amount: string; method: string };
  onChange: (change: { amount?: string; method?: string }) => void;
}) {
  return (
    <>
      <Field label={labels[0]}>
        <input
          type="number"
          min="0.01"
          step="0.01"
          required
          value={value.amount}
          onInput={(e) => onChange({ amount: e.currentTarget.value })}
        />
      </Field>
      <Field label={labels[1]}>
        <select value={value.method} onChange={(e) => onChange({ method: e.currentTarget.value })}>
          <option value="eft">EFT</option>
          <option value="card">Card</option>
          <option value="cash">Cash</option>
        </select>
      </Field>
    </>
  );
}

function InvoiceActions({ detail, reload }: { detail: InvoiceDetail; reload: () => void }) {
  const { api, practiceId } = useConsole();
  const { invoice, claim } = detail;
  const [reverseReason, setReverseReason] = useState('');
  const [cancelReason, setCancelReason] = useState('');
  const [errorReason, setErrorReason] = useState('');
  const [writeOffReason, setWriteOffReason] = useState('');
  const [writeOffKey] = useState(() => new ActionKey());
  const [payment, setPayment] = useState({
    amount: '',
    method: 'eft',
    reference: '',
    source: 'patient',
    receivedAt: '',
  });
  const [paymentKey] = useState(() => new ActionKey());
  const [refund, setRefund] = useState({ amount: '', method: 'eft', reference: '', reason: '' });
  const [refundKey] = useState(() => new ActionKey());
  const [done, setDone] = useState('');
  const after = (message: string) => () => {
    setDone(message);
    reload();
  };
  const canClaim = OPEN.includes(invoice.status);
  const closable =
    CLOSABLE.includes(invoice.status) && (invoice.status !== 'balanced' || invoice.amountPaid === 0);
  return (
    <section class="panel" aria-labelledby="actions-title">
      <h2 id="actions-title">Fix and send</h2>
      {done ? <Notice>{done}</Notice> : null}
      <div class="actions">
        {invoice.status !== 'draft' ? (
          <Action
            label="Download account"
            run={() => api.invoiceDocument(practiceId, invoice.id)}
            done={(blob) => saveFile(blob as Blob, `${invoice.number}.pdf`)}
          />
        ) : null}
        {EDITABLE.includes(invoice.status) ? (
          <Action
            kind="primary"
            label="Issue invoice"
            run={() => api.issueInvoice(practiceId, invoice.id)}
            done={after('Invoice issued.')}
          />
        ) : null}
        {AMENDABLE.includes(invoice.status) ? (
          <Action
            label="Reopen for changes (amend)"
            run={() => api.amendInvoice(practiceId, invoice.id)}
            done={after('Invoice reopened for changes.')}
          />
        ) : null}
        {!claim && canClaim ? (
          <Action
            kind="primary"
            label="Send claim"
            run={() => api.sendClaim(practiceId, invoice.id)}
            done={after('Claim sent; waiting for the insurer.')}
          />
        ) : null}
        {claim?.resubmittable ? (
          <Action
            kind="primary"
            label="Resubmit claim"
            run={() => api.resubmitClaim(practiceId, invoice.id)}
            done={after('Claim resubmitted; waiting for the insurer.')}
          />
        ) : null}
      </div>
      {claim?.reversible ? (
        <ActionForm
          label="Reverse claim"
          submitLabel="Reverse claim"
          confirm={`Reverse the claim on invoice ${invoice.number}? The insurer is asked to take back what it accepted.`}
          submit={async () => {
            await api.reverseClaim(practiceId, invoice.id, reverseReason.trim());
            after('Reversal sent; waiting for the insurer.')();
          }}
        >
          <Field label="Reason for the reversal">
            <input value={reverseReason} onInput={(e) => setReverseReason(e.currentTarget.value)} />
          </Field>
        </ActionForm>
      ) : null}
      {OPEN.includes(invoice.status) ? (
        <ActionForm
          label="Record a payment"
          submitLabel="Record payment"
          submit={async () => {
            const body = {
              invoiceId: invoice.id,
              amount: Math.round(Number(payment.amount) * 100),
              method: payment.method,
              source: payment.source,
              ...(payment.reference.trim() ? { reference: payment.reference.trim() } : {}),
              // The browser's local time, the one the operator typed, sent with its offset (as UTC).
              ...(payment.receivedAt ? { receivedAt: new Date(payment.receivedAt).toISOString() } : {}),
            };
            // Submitting the same payment again after a lost answer, 409 conflict or 5xx retries it under
            // the same key; after a final refusal (say 422, not issued) it is a new payment, a new key.
            try {
              await api.recordPayment(practiceId, body, paymentKey.for(body));
            } catch (error) {
              paymentKey.failed(error);
              throw error;
            }
            paymentKey.done();
            setPayment({ ...payment, amount: '', reference: '', receivedAt: '' });
            after('Payment recorded.')();
          }}
        >
          <AmountAndMethod
            labels={[`Amount (${invoice.currency})`, 'Method']}
            value={payment}
            onChange={(change) => setPayment({ ...payment, ...change })}
          />
          <Field label="From">
            <select
              value={payment.source}
              onChange={(e) => setPayment({ ...payment, source: e.currentTarget.value })}
            >
              <option value="patient">Patient</option>
              <option value="insurer">Insurer</option>
            </select>
          </Field>
          <Field label="Reference">
            <input
              value={payment.reference}
              onInput={(e) => setPayment({ ...payment, reference: e.currentTarget.value })}
            />
          </Field>
          <Field label="Received (empty: now)">
            <input
              type="datetime-local"
              value={payment.receivedAt}
              onInput={(e) => setPayment({ ...payment, receivedAt: e.currentTarget.value })}
            />
          </Field>
        </ActionForm>
      ) : null}
      {REFUNDABLE.includes(invoice.status) && invoice.amountPaid > 0 ? (
        <ActionForm
          label="Record a refund"
          submitLabel="Record refund"
          confirm={`Record money given back to the patient on invoice ${invoice.number}? The invoice owes that amount again.`}
          submit={async () => {
            const body = {
              invoiceId: invoice.id,
              amount: Math.round(Number(refund.amount) * 100),
              method: refund.method,
              reason: refund.reason.trim(),
              ...(refund.reference.trim() ? { reference: refund.reference.trim() } : {}),
            };
            // As a payment: the same refund submitted again after a failure that may hide an act keeps
            // its key, so the service replays it instead of giving the money back twice.
            try {
              await api.recordRefund(practiceId, body, refundKey.for(body));
            } catch (error) {
              refundKey.failed(error);
              throw error;
            }
            refundKey.done();
            setRefund({ ...refund, amount: '', reference: '', reason: '' });
            after('Refund recorded.')();
          }}
        >
          <AmountAndMethod
            labels={[`Refund amount (${invoice.currency})`, 'Paid back by']}
            value={refund}
            onChange={(change) => setRefund({ ...refund, ...change })}
          />
          <Field label="Refund slip or transfer number">
            <input
              value={refund.reference}
              onInput={(e) => setRefund({ ...refund, reference: e.currentTarget.value })}
            />
          </Field>
          <Field label="Reason for the refund">
            <input
              required
              value={refund.reason}
              onInput={(e) => setRefund({ ...refund, reason: e.currentTarget.value })}
            />
          </Field>
        </ActionForm>
      ) : null}
      {OPEN.includes(invoice.status) ? (
        <ActionForm
          label="Write off"
          submitLabel="Write off balance"
          class="danger-zone"
          confirm={`Write off the balance of invoice ${invoice.number}? The practice stops collecting it; this cannot be undone.`}
          submit={async () => {
            const reason = writeOffReason.trim();
            try {
              await api.writeOffInvoice(practiceId, invoice.id, reason, writeOffKey.for({ reason }));
            } catch (error) {
              writeOffKey.failed(error);
              throw error;
            }
            writeOffKey.done();
            after('Balance written off.')();
          }}
        >
          <Field label="Reason for writing off">
            <input
              required
              value={writeOffReason}
              onInput={(e) => setWriteOffReason(e.currentTarget.value)}
            />
          </Field>
        </ActionForm>
      ) : null}
      {closable ? (
        <ActionForm
          label="Entered in error"
          submitLabel="Mark entered in error"
          class="danger-zone"
          confirm={`Mark invoice ${invoice.number} entered in error? It is closed as if it never existed, and its visits can be billed again.`}
          submit={async () => {
            await api.markEnteredInError(practiceId, invoice.id, errorReason.trim());
            after('Invoice marked entered in error.')();
          }}
        >
          <Field label="Why it was entered in error">
            <input required value={errorReason} onInput={(e) => setErrorReason(e.currentTarget.value)} />
          </Field>
        </ActionForm>
      ) : null}
      {closable ? (
        <ActionForm
          label="Cancel invoice"
          submitLabel="Cancel invoice"
          class="danger-zone"
          confirm={`Cancel invoice ${invoice.number}? This cannot be undone.`}
          submit={async () => {
            await api.cancelInvoice(practiceId, invoice.id, cancelReason.trim());
            after('Invoice cancelled.')();
          }}
        >
          <Field label="Reason for cancelling">
            <input required value={cancelReason} onInput={(e) => setCancelReason(e.currentTarget.value)} />
          </Field>
        </ActionForm>
      ) : null}
    </section>
  );
}

const DELIVERY_WORDS: Record<string, string> = {
  none: 'not e-mailed',
  queued: 'waiting to be sent',
  sent: 'sent',
  failed: 'failed',
  no_address: 'no e-mail address',
};

/** What the patient was told about this invoice (each issue's e-mail) and what became of it. */
function PatientToldSection({ detail }: { detail: InvoiceDetail }) {
  const { api, practiceId } = useConsole();
  const loaded = useLoad(
    () => api.notificationsAbout(practiceId, detail.invoice.id),
    [practiceId, detail.invoice.id, detail.invoice.updatedAt],
  );
  return (
    <section aria-labelledby="told-title">
      <h2 id="told-title">The patient is told</h2>
      <Loading loaded={loaded}>
        {(page) =>
          page.data.length === 0 ? (
            <p>Not issued yet: the patient is e-mailed the account when it is.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Issued</th>
                  <th scope="col">Told</th>
                  <th scope="col">E-mail</th>
                  <th scope="col">Detail</th>
                </tr>
              </thead>
              <tbody>
                {page.data.map((n) => (
                  <tr
                    key={n.id}
                    class={n.delivery === 'failed' || n.delivery === 'no_address' ? 'row-bad' : ''}
                  >
                    <td>{dateTime(n.createdAt)}</td>
                    <td>{n.message}</td>
                    <td>
                      <Status value={DELIVERY_WORDS[n.delivery] ?? n.delivery} />
                    </td>
                    <td>{n.deliveryDetail ?? '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
    </section>
  );
}

function ClaimSection({
  claim,
  detail,
  fmt,
}: {
  claim: Claim | null;
  detail: InvoiceDetail;
  fmt: (v: number | null) => string;
}) {
  if (!claim) {
    return (
      <>
        <h2>Claim</h2>
        <p>Not claimed yet.</p>
      </>
    );
  }
  const codeOf = (lineItemId: string | null) =>
    detail.invoice.lineItems.find((l) => l.id === lineItemId)?.code ?? '—';
  return (
    <section aria-labelledby="claim-title">
      <h2 id="claim-title">
        Claim <Status value={claim.status} />
      </h2>
      <p>
        Sent {dateTime(claim.submittedAt)}
        {claim.authorizationReference ? `, authorisation ${claim.authorizationReference}` : ''}.
      </p>
      {claim.message ? (
        <p class={`note ${claim.outcome === 'error' ? 'error' : ''}`}>
          <strong>Insurer's message:</strong> {claim.message}
        </p>
      ) : null}
      {claim.items.length > 0 ? (
        <table>
          <thead>
            <tr>
              <th scope="col">Line</th>
              <th scope="col">Code</th>
              <th scope="col">Decision</th>
              <th scope="col" class="number">
                Submitted
              </th>
              <th scope="col" class="number">
                Benefit
              </th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {claim.items.map((item) => (
              <tr key={item.lineNumber}>
                <td>{item.lineNumber}</td>
                <td>{codeOf(item.lineItemId)}</td>
                <td>
                  <Status value={item.decision} />
                </td>
                <td class="number">{fmt(item.submitted)}</td>
                <td class="number">{fmt(item.benefit)}</td>
                <td>
                  {[...item.rejections, ...item.warnings]
                    .map((n) => `${n.code}: ${n.description}`)
                    .join('; ') || '—'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

function CoverageSection({ detail, reload }: { detail: InvoiceDetail; reload: () => void }) {
  const { api, practiceId } = useConsole();
  const current = detail.coverages.find((c) => c.id === detail.invoice.coverageId) ?? detail.coverages[0];
  const [planId, setPlanId] = useState(current?.planId ?? '');
  const [memberNumber, setMemberNumber] = useState('');
  const [done, setDone] = useState('');
  const resubmit = detail.claim?.resubmittable === true;
  return (
    <section aria-labelledby="coverage-title">
      <h2 id="coverage-title">Coverage</h2>
      {detail.coverages.length === 0 ? (
        <p>The patient has no coverage.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Coverage</th>
              <th scope="col">Plan</th>
              <th scope="col">Member number</th>
              <th scope="col">Active</th>
              <th scope="col">Used by this invoice</th>
            </tr>
          </thead>
          <tbody>
            {detail.coverages.map((c) => (
              <tr key={c.id}>
                <td>{c.id}</td>
                <td>{c.planId}</td>
                <td>{c.memberNumber}</td>
                <td>{c.active ? 'yes' : 'no'}</td>
                <td>{c.id === detail.invoice.coverageId ? 'yes' : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {done ? <Notice>{done}</Notice> : null}
      <ActionForm
        label="Correct the member number"
        submitLabel={resubmit ? 'Save and resubmit claim' : 'Add coverage'}
        submit={async () => {
          const coverage = await api.addCoverage(practiceId, detail.patient.id, {
            planId: planId.trim(),
            memberNumber: memberNumber.trim(),
          });
          if (resubmit) {
            await api.resubmitClaim(practiceId, detail.invoice.id, coverage.id);
            setDone(
              `Coverage ${coverage.id} added with member number ${coverage.memberNumber}; claim resubmitted under it.`,
            );
          } else {
            setDone(`Coverage ${coverage.id} added with member number ${coverage.memberNumber}.`);
          }
          setMemberNumber('');
          reload();
        }}
      >
        <Field label="Plan">
          <input required value={planId} onInput={(e) => setPlanId(e.currentTarget.value)} />
        </Field>
        <Field label="Corrected member number">
          <input
            required
            maxLength={30}
            value={memberNumber}
            onInput={(e) => setMemberNumber(e.currentTarget.value)}
          />
        </Field>
      </ActionForm>
    </section>
  );
}

function EventsSection({ detail, reload }: { detail: InvoiceDetail; reload: () => void }) {
  const { api, practiceId } = useConsole();
  const [done, setDone] = useState('');
  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title">Events and webhook deliveries</h2>
      {done ? <Notice>{done}</Notice> : null}
      {detail.events.length === 0 ? (
        <p>No event yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Occurred</th>
              <th scope="col">Delivery attempts</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {detail.events.map((e) => {
              const attempts = detail.deliveries.filter((d) => d.eventId === e.id);
              const last = attempts.at(-1)?.statusCode;
              // Any 2xx is a delivery (a receiver may well answer 204 No Content).
              const failed = attempts.length > 0 && !(last != null && last >= 200 && last < 300);
              return (
                <tr key={e.id} class={failed ? 'row-bad' : ''}>
                  <td>
                    {e.type}
                    <br />
                    <small class="muted">{e.id}</small>
                  </td>
                  <td>{dateTime(e.occurredAt)}</td>
                  <td>
                    {attempts.length === 0 ? (
                      <span class="muted">none</span>
                    ) : (
                      <ul class="attempts">
                        {attempts.map((a) => (
                          <li key={a.id}>
                            #{a.attemptNumber} {a.statusCode ?? 'no answer'}
                            {a.error ? ` (${a.error})` : ''}{' '}
                            <small class="muted">{dateTime(a.attemptedAt)}</small>
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                  <td>
                    <Action
                      label="Redeliver"
                      run={() => api.redeliverEvent(practiceId, e.id)}
                      done={(r) => {
                        const queued = (r as { queued: number }).queued;
                        setDone(
                          `${e.type} queued for delivery to ${queued} endpoint${queued === 1 ? '' : 's'}.`,
                        );
                        reload();
                      }}
                    />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
