-- Deploy pgflight:functions/wake_ticket_key

begin;

set local role pgflight_owner;

-- The advisory lock key of a wake ticket for the calling login (the worker's LISTEN connection):
-- p_key is the key the worker computed from its recipe group and the ticket (the NOTIFY payload);
-- the result mixes in the engine's secret (tables/wake_ticket_secret) and the workspaces the login
-- is a worker of ('*' for every workspace), so processes of the same workspaces and recipes still
-- meet on one key (one of them claims), while a login that is not a worker of those workspaces
-- cannot compute that key and so cannot win the ticket first. The worker takes and releases the
-- session lock on the result (pg_try_advisory_lock(wake_ticket_key(k)), pg_advisory_unlock(...)).
-- Null for a login with no worker lane (the worker then answers the ticket as a plain wake-up). Before, the key was computable
-- by any login from the recipe names and the payload: a listener that held it first kept the
-- workers asleep until their poll (8 ms to 2 s from submit to claim). Raises nothing.
CREATE OR REPLACE FUNCTION pgflight.wake_ticket_key(p_key bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('worker');
  v_digest bytea;
begin
  if p_key is null or v_lanes = '{}' then
    return null;
  end if;
  select sha256(s.secret || convert_to(
           coalesce((select string_agg(w::text, ',' order by w) from unnest(v_lanes) w), '*') || ':' || p_key,
           'UTF8'))
    into v_digest
    from pgflight.wake_ticket_secret s;
  -- the first 8 bytes as a signed 64-bit key
  return ('x' || encode(substring(v_digest from 1 for 8), 'hex'))::bit(64)::bigint;
end
$$;

COMMENT ON FUNCTION pgflight.wake_ticket_key(p_key bigint) IS 'The advisory lock key (bigint) of a wake ticket for the calling login''s worker lanes, derived from the engine''s secret and p_key (the worker''s key of its recipe group and the ticket); null without a worker lane.';

REVOKE ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.wake_ticket_key(p_key bigint) TO pgflight_reader;

commit;
