// Owns the small building blocks every page uses: loading data, showing a refusal, status badges,
// labelled fields and buttons that run an admin call and report what happened.
import { type ComponentChildren, cloneElement, createContext, type VNode } from 'preact';
import { useCallback, useContext, useEffect, useId, useState } from 'preact/hooks';
import { type AdminApi, ApiError } from '../api.ts';
import { words } from '../format.ts';
import type { Session } from '../session.ts';

export interface ConsoleContext {
  api: AdminApi;
  session: Session;
  practiceId: string;
}

export const Console = createContext<ConsoleContext | null>(null);

export function useConsole(): ConsoleContext {
  const value = useContext(Console);
  if (!value) throw new Error('useConsole outside the signed-in console');
  return value;
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` now and whenever `keys` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error: unknown) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...keys, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { ...state, reload };
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) {
    const fields = error.fieldErrors.map((f) => `${f.field}: ${f.message}`).join('; ');
    return fields ? `${error.message} (${fields})` : error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="note error" role="alert">
      {messageOf(error)}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="note ok" role="status">
      {children}
    </p>
  );
}

export function Loading<T>({
  loaded,
  children,
}: {
  loaded: Loaded<T>;
  children: (data: T) => ComponentChildren;
}) {
  if (loaded.error) return <ErrorNote error={loaded.error} />;
  if (loaded.data === undefined) return <p aria-busy="true">Loading…</p>;
  return <>{children(loaded.data)}</>;
}

const TONE: Record<string, string> = {
  accepted: 'good',
  approved: 'good',
  approved_with_warning: 'warn',
  denied: 'bad',
  balanced: 'good',
  delivered: 'good',
  active: 'good',
  rejected: 'bad',
  reversal_failed: 'bad',
  failed: 'bad',
  overdue: 'bad',
  suspended: 'bad',
  disabled: 'bad',
  partially_accepted: 'warn',
  partially_paid: 'warn',
  submitting: 'info',
  reversing: 'info',
  amending: 'info',
  draft: 'muted',
  cancelled: 'muted',
};

export function Status({ value }: { value: string | null | undefined }) {
  if (!value) return <span class="muted">—</span>;
  return <span class={`badge ${TONE[value] ?? 'neutral'}`}>{words(value)}</span>;
}

/** A labelled control: the label names exactly `label` (not the control's value) and the hint describes it. */
export function Field({ label, children, hint }: { label: string; children: VNode; hint?: string }) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {cloneElement(children, { id, ...(hint ? { 'aria-describedby': `${id}-hint` } : {}) })}
      {hint ? <small id={`${id}-hint`}>{hint}</small> : null}
    </div>
  );
}

/** A button that runs one admin call; shows it is busy, then the refusal or calls `done`. */
export function Action({
  label,
  run,
  done,
  kind = 'secondary',
  disabled = false,
  confirm,
}: {
  label: string;
  run: () => Promise<unknown>;
  done?: (result: unknown) => void;
  kind?: 'primary' | 'secondary' | 'danger';
  disabled?: boolean;
  /** A destructive action asks this first, and does nothing unless the operator agrees. */
  confirm?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  return (
    <span class="action">
      <button
        type="button"
        class={kind}
        disabled={busy || disabled}
        aria-busy={busy}
        onClick={async () => {
          if (!confirmed(confirm)) return;
          setBusy(true);
          setError(undefined);
          try {
            const result = await run();
            done?.(result);
          } catch (e) {
            setError(e);
          } finally {
            setBusy(false);
          }
        }}
      >
        {label}
      </button>
      <ErrorNote error={error} />
    </span>
  );
}

/** True when there is nothing to confirm, or the operator agreed to `question`. */
function confirmed(question: string | undefined): boolean {
  return question === undefined || window.confirm(question);
}

/** A form that runs one admin call on submit, with its refusal shown under it. */
export function ActionForm({
  label,
  submit,
  children,
  class: className,
  submitLabel,
  confirm,
}: {
  label: string;
  submit: () => Promise<unknown>;
  children: ComponentChildren;
  class?: string;
  submitLabel: string;
  /** A destructive action asks this first, and does nothing unless the operator agrees. */
  confirm?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  return (
    <form
      class={`action-form ${className ?? ''}`}
      aria-label={label}
      onSubmit={async (event) => {
        event.preventDefault();
        if (!confirmed(confirm)) return;
        setBusy(true);
        setError(undefined);
        try {
          await submit();
        } catch (e) {
          setError(e);
        } finally {
          setBusy(false);
        }
      }}
    >
      {children}
      <button type="submit" class="primary" disabled={busy} aria-busy={busy}>
        {submitLabel}
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
