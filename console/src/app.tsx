// The console's frame: sign-in, then the header (pages, the practice in view, sign out) and the page
// the address names. The operator view can switch practice; a practice view stays in its practice.
import { useMemo, useState } from 'preact/hooks';
import { AdminApi } from './api.ts';
import { Console, useLoad } from './components/ui.tsx';
import { AuditPage } from './pages/audit.tsx';
import { ClientsPage } from './pages/clients.tsx';
import { DashboardPage } from './pages/dashboard.tsx';
import { InvoicePage } from './pages/invoice.tsx';
import { InvoicesPage } from './pages/invoices.tsx';
import { OutboxPage } from './pages/outbox.tsx';
import { PracticesPage } from './pages/practices.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { WebhooksPage } from './pages/webhooks.tsx';
import { href, navigate, type Route, useRoute } from './router.ts';
import { loadSession, type Session, saveSession } from './session.ts';

const PAGES = [
  { path: 'dashboard', label: 'Dashboard' },
  { path: 'invoices', label: 'Invoices' },
  { path: 'webhooks', label: 'Webhooks' },
  { path: 'outbox', label: 'Outbox' },
  { path: 'clients', label: 'API clients' },
  { path: 'audit', label: 'Audit log' },
];

export function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const update = (next: Session | null) => {
    saveSession(next);
    setSession(next);
  };
  if (!session)
    return (
      <SignIn
        onSignIn={(s) => {
          update(s);
          navigate('dashboard');
        }}
      />
    );
  return <SignedIn session={session} update={update} />;
}

function SignedIn({ session, update }: { session: Session; update: (s: Session | null) => void }) {
  const route = useRoute();
  const api = useMemo(() => new AdminApi(session.token), [session.token]);
  const practices = useLoad(() => api.listPractices(), [api]);
  const practice = practices.data?.data.find((p) => p.id === session.practiceId);
  const open = (practiceId: string) => update({ ...session, practiceId });
  const section = route.path[0] ?? 'dashboard';
  return (
    <Console.Provider value={{ api, session, practiceId: session.practiceId }}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Practice Billing</span>
        <nav aria-label="Pages">
          <ul>
            {[
              ...PAGES,
              ...(session.scope === 'operator' ? [{ path: 'practices', label: 'Practices' }] : []),
            ].map((p) => (
              <li key={p.path}>
                <a href={href(p.path)} aria-current={section === p.path ? 'page' : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          {session.scope === 'operator' ? (
            <span class="inline">
              <label for="practice-switch">Practice</label>
              <select
                id="practice-switch"
                value={session.practiceId}
                onChange={(e) => open(e.currentTarget.value)}
              >
                {(practices.data?.data ?? []).map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.name}
                  </option>
                ))}
              </select>
            </span>
          ) : (
            <span>
              Practice view: <strong>{practice?.name ?? session.practiceId}</strong>
            </span>
          )}
          <button type="button" onClick={() => update(null)}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {/* A page starts afresh on every address and practice: what it said about one record (a
            success, a refusal) never shows on the next. */}
        <Page
          key={`${session.practiceId} ${route.path.join('/')}?${route.params.toString()}`}
          route={route}
          onOpen={open}
          operator={session.scope === 'operator'}
        />
      </main>
    </Console.Provider>
  );
}

function Page({
  route,
  onOpen,
  operator,
}: {
  route: Route;
  onOpen: (id: string) => void;
  operator: boolean;
}) {
  const [section, id] = route.path;
  switch (section) {
    case 'invoices':
      return id ? <InvoicePage invoiceId={id} /> : <InvoicesPage params={route.params} />;
    case 'webhooks':
      return <WebhooksPage params={route.params} />;
    case 'outbox':
      return <OutboxPage />;
    case 'clients':
      return <ClientsPage />;
    case 'audit':
      return <AuditPage params={route.params} />;
    case 'practices':
      return operator ? <PracticesPage onOpen={onOpen} /> : <DashboardPage />;
    default:
      return <DashboardPage />;
  }
}
