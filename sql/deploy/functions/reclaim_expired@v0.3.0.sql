-- Deploy pgflight:functions/reclaim_expired
begin;
set local role pgflight_owner;

-- Sweep: reclaim up to p_limit attempts whose lease lapsed (lease_expired: retry or dead letter;
-- a cancel_requested one becomes cancelled) or whose deadline passed (timed_out). Uses only the
-- stored lease_expires_at and deadline_at (C16). Safe to run concurrently with itself and with
-- claim_batch (SKIP LOCKED). Returns how many attempts it ended.
create or replace function pgflight.reclaim_expired(p_limit integer default 1000)
returns integer
language sql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
  select pgflight._require_lane('operator', null, 'reclaim_expired');  -- issue 13: acts on every workspace
  select pgflight._reclaim(pgflight._now(), pgflight._check_limit(p_limit))  -- 22023 for a negative limit (issue 14)
$$;
comment on function pgflight.reclaim_expired(integer) is
  'Sweep: reclaim expired leases and overrun deadlines, at most p_limit; returns the count.';
grant execute on function pgflight.reclaim_expired(integer) to pgflight_operator;

commit;
