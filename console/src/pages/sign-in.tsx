// The sign-in page: the operator pastes the admin token, then opens the operator view (every
// practice) or one practice's view.
import { useState } from 'preact/hooks';
import { AdminApi } from '../api.ts';
import { ErrorNote, Field } from '../components/ui.tsx';
import type { Session } from '../session.ts';
import type { Practice } from '../types.ts';

export function SignIn({ onSignIn }: { onSignIn: (session: Session) => void }) {
  const [token, setToken] = useState('');
  const [practices, setPractices] = useState<Practice[] | null>(null);
  const [scope, setScope] = useState<'operator' | 'practice'>('operator');
  const [practiceId, setPracticeId] = useState('');
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);

  const checkToken = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const list = await new AdminApi(token.trim()).listPractices();
      setPractices(list.data);
      setPracticeId(list.data[0]?.id ?? '');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Practice Billing console</h1>
      {practices === null ? (
        <form onSubmit={checkToken} aria-label="Sign in">
          <Field label="Admin token" hint="Kept in this browser tab only, until you sign out or close it.">
            <input
              type="password"
              name="token"
              autoComplete="off"
              required
              value={token}
              onInput={(e) => setToken(e.currentTarget.value)}
            />
          </Field>
          <button type="submit" class="primary" disabled={busy}>
            Sign in
          </button>
          <ErrorNote error={error} />
        </form>
      ) : (
        <form
          aria-label="Choose a view"
          onSubmit={(event) => {
            event.preventDefault();
            if (practiceId) onSignIn({ token: token.trim(), scope, practiceId });
          }}
        >
          <fieldset>
            <legend>View</legend>
            <label class="choice">
              <input
                type="radio"
                name="scope"
                value="operator"
                checked={scope === 'operator'}
                onChange={() => setScope('operator')}
              />
              Operator: every practice ({practices.length})
            </label>
            <label class="choice">
              <input
                type="radio"
                name="scope"
                value="practice"
                checked={scope === 'practice'}
                onChange={() => setScope('practice')}
              />
              One practice only
            </label>
          </fieldset>
          {practices.length === 0 ? (
            <p class="note">No practice exists yet; create one with the CLI or the admin API.</p>
          ) : (
            <Field label={scope === 'operator' ? 'Start with practice' : 'Practice'}>
              <select value={practiceId} onChange={(e) => setPracticeId(e.currentTarget.value)}>
                {practices.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.name} ({p.id})
                  </option>
                ))}
              </select>
            </Field>
          )}
          <button type="submit" class="primary" disabled={!practiceId}>
            Open console
          </button>
        </form>
      )}
    </main>
  );
}
