// The invoices page: filter by status and claim status, search by number or patient, page through
// newest change first (keyset: each page's cursor comes from the one before).
import { useState } from 'preact/hooks';
import { Field, Loading, Status, useConsole, useLoad } from '../components/ui.tsx';
import { dateTime, money, words } from '../format.ts';
import { href, navigate } from '../router.ts';
import { CLAIM_STATUS_LIST, INVOICE_STATUS_LIST } from '../types.ts';

export function InvoicesPage({ params }: { params: URLSearchParams }) {
  const { api, practiceId } = useConsole();
  const status = params.get('status') ?? '';
  const claimStatus = params.get('claimStatus') ?? '';
  const q = params.get('q') ?? '';
  const [cursors, setCursors] = useState<string[]>([]);
  const filterKey = `${practiceId}|${status}|${claimStatus}|${q}`;
  const [forFilters, setForFilters] = useState(filterKey);
  if (forFilters !== filterKey) {
    setForFilters(filterKey);
    setCursors([]);
  }
  const cursor = cursors.at(-1);
  const loaded = useLoad(
    () =>
      api.listInvoices(practiceId, {
        ...(status ? { status } : {}),
        ...(claimStatus ? { claimStatus } : {}),
        ...(q ? { q } : {}),
        ...(cursor ? { cursor } : {}),
        limit: 20,
      }),
    [filterKey, cursor],
  );

  return (
    <section aria-labelledby="invoices-title">
      <h1 id="invoices-title">Invoices</h1>
      <form
        class="filters"
        aria-label="Filter invoices"
        onSubmit={(event) => {
          event.preventDefault();
          const form = new FormData(event.currentTarget);
          navigate('invoices', {
            status: String(form.get('status') ?? ''),
            claimStatus: String(form.get('claimStatus') ?? ''),
            q: String(form.get('q') ?? '').trim(),
          });
        }}
      >
        <Field label="Status">
          <select name="status" defaultValue={status} key={`s${status}`}>
            <option value="">Any</option>
            {INVOICE_STATUS_LIST.map((s) => (
              <option key={s} value={s}>
                {words(s)}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Claim status">
          <select name="claimStatus" defaultValue={claimStatus} key={`c${claimStatus}`}>
            <option value="">Any</option>
            {CLAIM_STATUS_LIST.map((s) => (
              <option key={s} value={s}>
                {words(s)}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Number or patient">
          <input type="search" name="q" defaultValue={q} key={`q${q}`} placeholder="INV-0001 or a name" />
        </Field>
        <button type="submit" class="primary">
          Apply
        </button>
        <a href={href('invoices')} class="button-link">
          Clear
        </a>
      </form>
      <Loading loaded={loaded}>
        {(page) =>
          page.data.length === 0 ? (
            <p>No invoice matches.</p>
          ) : (
            <>
              <table>
                <caption class="visually-hidden">Invoices, newest change first</caption>
                <thead>
                  <tr>
                    <th scope="col">Number</th>
                    <th scope="col">Patient</th>
                    <th scope="col">Date</th>
                    <th scope="col">Status</th>
                    <th scope="col">Claim</th>
                    <th scope="col" class="number">
                      Total
                    </th>
                    <th scope="col" class="number">
                      Balance due
                    </th>
                    <th scope="col">Changed</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((i) => (
                    <tr key={i.id}>
                      <td>
                        <a href={href(`invoices/${i.id}`)}>{i.number}</a>
                      </td>
                      <td>{i.patientName}</td>
                      <td>{i.date}</td>
                      <td>
                        <Status value={i.status} />
                      </td>
                      <td>
                        <Status value={i.claimStatus} />
                      </td>
                      <td class="number">{money(i.totalGross, i.currency)}</td>
                      <td class="number">{money(i.balanceDue, i.currency)}</td>
                      <td>{dateTime(i.updatedAt)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <nav class="pager" aria-label="Pages">
                <button
                  type="button"
                  disabled={cursors.length === 0}
                  onClick={() => setCursors(cursors.slice(0, -1))}
                >
                  Previous page
                </button>
                <span>Page {cursors.length + 1}</span>
                <button
                  type="button"
                  disabled={!page.nextCursor}
                  onClick={() => page.nextCursor && setCursors([...cursors, page.nextCursor])}
                >
                  Next page
                </button>
              </nav>
            </>
          )
        }
      </Loading>
    </section>
  );
}
