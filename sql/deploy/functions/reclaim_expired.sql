-- Deploy pgflight:functions/reclaim_expired

begin;

set local role pgflight_owner;

-- Sweep: reclaim up to p_limit attempts whose lease lapsed (lease_expired: retry or dead letter;
-- a cancel_requested one becomes cancelled) or whose deadline passed (timed_out). Uses only the
-- stored lease_expires_at and deadline_at (C16). Safe to run concurrently with itself and with
-- claim_batch (SKIP LOCKED on every row). Set-based: a batch of thousands is a few
-- statements; run_sweeps grows the batch while a backlog lasts. Returns how many attempts it ended.
CREATE OR REPLACE FUNCTION pgflight.reclaim_expired(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._require_lane('operator', null, 'reclaim_expired');  -- acts on every workspace
  select pgflight._reclaim(pgflight._now(), pgflight._check_limit(p_limit))  -- 22023 for a negative limit
$$;

COMMENT ON FUNCTION pgflight.reclaim_expired(p_limit integer) IS 'Sweep: reclaim expired leases and overrun deadlines, at most p_limit; returns the count.';

REVOKE ALL ON FUNCTION pgflight.reclaim_expired(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.reclaim_expired(p_limit integer) TO pgflight_operator;

commit;
