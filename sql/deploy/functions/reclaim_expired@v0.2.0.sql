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
set search_path = ''
as $$ select pgflight._reclaim(pgflight._now(), p_limit) $$;
comment on function pgflight.reclaim_expired(integer) is
  'Sweep: reclaim expired leases and overrun deadlines, at most p_limit; returns the count.';
grant execute on function pgflight.reclaim_expired(integer) to pgflight_operator;

commit;
