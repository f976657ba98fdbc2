// Two additions. Events carry the detail a receiver needs to tell two of them apart without a read:
// `detail` (jsonb, null for invoice events) holds the claim's id and status of a claim.status_changed,
// and the payment's id, amount, currency and source of a payment.created (src/events/schemas.ts says
// how it shows in `data`). API keys record who issued them (`created_by`, the operator identity the
// admin API knows) and when they were last used (`last_used_at`, written at most once a minute per key
// by src/auth/authenticate.ts). The key look-up (migration 0006) answers `last_used_at` too, so that a
// request can tell whether it is due without a read of its own; neither column is one migration 0012's
// triggers watch, so writing them tells no cache to forget its keys. Forward-only.
import type { Kysely } from 'kysely';
import { OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE events ADD COLUMN detail jsonb;
    ALTER TABLE api_keys ADD COLUMN created_by text;
    ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

    DROP FUNCTION api_key_for_request(text);
    CREATE FUNCTION api_key_for_request(wanted_key_id text)
    RETURNS TABLE (
      key_id text, secret_hash bytea, expires_at timestamptz, revoked_at timestamptz,
      client_id text, permissions text[], allowed_ips text[], rate_limit_per_minute integer,
      suspended_at timestamptz, practice_id text, practice_name text, currency text, timezone text,
      integrations_enabled boolean, last_used_at timestamptz
    )
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
    BEGIN
      RETURN QUERY
      SELECT k.id, k.secret_hash, k.expires_at, k.revoked_at,
             c.id, c.permissions, c.allowed_ips, c.rate_limit_per_minute,
             c.suspended_at, p.id, p.name, p.currency::text, p.timezone,
             p.integrations_enabled, k.last_used_at
      FROM public.api_keys k
      JOIN public.clients c ON c.practice_id = k.practice_id AND c.id = k.client_id
      JOIN public.practices p ON p.id = k.practice_id
      WHERE k.id = wanted_key_id;
    END
    $$;
    REVOKE ALL ON FUNCTION api_key_for_request(text) FROM PUBLIC;
    GRANT CREATE ON SCHEMA public TO ${OPERATOR_ROLE};
    ALTER FUNCTION api_key_for_request(text) OWNER TO ${OPERATOR_ROLE};
    REVOKE CREATE ON SCHEMA public FROM ${OPERATOR_ROLE};
    GRANT EXECUTE ON FUNCTION api_key_for_request(text) TO ${OPERATOR_ROLE};
  `,
  );
}
