-- Deploy pgflight:functions/claim_batch
begin;
set local role pgflight_owner;

-- Lease up to p_batch_size ready attempts to a worker: fairly across workspaces (served in turn,
-- weighted by share), highest priority first inside a workspace, within the in-flight caps,
-- concurrency keys, rate limits and pauses (issue 15; how, at the head of internals/_fair_claim).
-- Each claimed attempt gets a fresh fencing token (a global sequence, so tokens strictly
-- increase) that every later write must carry, and a lease of the step's lease_s, else p_lease_s
-- seconds, stored on the attempt so heartbeat and reclaim never recompute it from configuration
-- (C16). First reclaims at most settings.reclaim_in_claim expired leases, so recovery does not
-- wait for cron. p_recipes limits the recipes (null: any). options: start (boolean, default
-- false): the attempts go straight to running, as if start_step had been called, which saves the
-- worker one round trip and one commit per step.
-- Locking: FOR UPDATE SKIP LOCKED on the ready rows, so concurrent claimers never block on or
-- share a row; try-locks for capped workspaces and concurrency keys; the one lock a claimer waits
-- for is the global cap's, taken first and alone (see internals/_fair_claim).
-- Errors: 22023 bad batch size or lease, ZF010 unknown or stopped worker.
--
-- Planner settings (enable_sort off, jit off, below): claim_batch walks the ready index in claim
-- order, whatever the statistics say. Right after a bulk submit, before autoanalyze, the planner
-- believes the queue holds a row or two and prefers to collect every queued row through another
-- index and sort them: measured 15 ms per claim with 20,000 queued (0.5 ms with enable_sort off,
-- 0.07 ms once vacuumed; found by bench/peers). Nothing else claim_batch runs needs a sort of more
-- than p_batch_size rows. jit off: the cost penalty of that final sort would otherwise cross
-- jit_above_cost and compile every claim (300 ms measured).
create or replace function pgflight.claim_batch(
  p_worker_id bigint, p_batch_size integer, p_lease_s double precision,
  p_recipes text[] default null, p_options jsonb default '{}')
returns table (attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint,
               step_key text, attempt_no integer, recipe text, input jsonb,
               lease_expires_at timestamptz, deadline_at timestamptz)
language plpgsql volatile security definer
set search_path = ''
set enable_sort = off
set jit = off
as $$
declare
  v_now timestamptz := pgflight._now();
  v_reclaim integer;
  v_start boolean := coalesce((p_options ->> 'start')::boolean, false);
begin
  perform pgflight._require_positive('batch_size', p_batch_size);
  perform pgflight._require_positive('lease_s', p_lease_s);
  update pgflight.workers set last_seen_at = v_now where id = p_worker_id and stopped_at is null;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown or stopped worker %s', p_worker_id),
      hint = 'Call register_worker first and use the id it returns.';
  end if;
  select s.reclaim_in_claim into v_reclaim from pgflight.settings s;
  if v_reclaim > 0 then
    perform pgflight._reclaim(v_now, v_reclaim);
  end if;

  -- the fair claim across workspaces, with caps, keys, rate limits and pause (internals/_fair_claim)
  return query select * from pgflight._claim_fair(p_worker_id, p_batch_size, p_lease_s, p_recipes, v_start, v_now);
end
$$;
comment on function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) is
  'Lease up to p_batch_size ready attempts (lease in seconds). Returns at most p_batch_size rows, '
  'each with its fencing token. Errors: 22023, ZF010 unknown worker.';
grant execute on function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) to pgflight_worker;

commit;
