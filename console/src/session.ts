// Owns the sign-in: the admin token and the chosen view, kept in this tab's sessionStorage only
// (gone when the tab closes; never a cookie, so it is sent nowhere but the admin API's header).
export interface Session {
  token: string;
  /** `operator` sees every practice and can switch; `practice` stays in `practiceId`. */
  scope: 'operator' | 'practice';
  practiceId: string;
}

const KEY = 'practice-billing-console';

export function loadSession(): Session | null {
  const text = sessionStorage.getItem(KEY);
  if (!text) return null;
  try {
    const value = JSON.parse(text) as Partial<Session>;
    if (typeof value.token !== 'string' || typeof value.practiceId !== 'string') return null;
    return {
      token: value.token,
      scope: value.scope === 'practice' ? 'practice' : 'operator',
      practiceId: value.practiceId,
    };
  } catch {
    return null;
  }
}

export function saveSession(session: Session | null): void {
  if (session) sessionStorage.setItem(KEY, JSON.stringify(session));
  else sessionStorage.removeItem(KEY);
}
