-- Revert pgflight:functions/claim_batch@v0.7.0: restores the previous definition, deploy/functions/claim_batch@v0.6.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Lease up to p_batch_size ready attempts to a worker: fairly across workspaces (served in turn,
-- weighted by share), highest priority first inside a workspace, within the in-flight caps,
-- concurrency keys, rate limits and pauses (issue 15; how, at the head of internals/_fair_claim).
-- Each claimed attempt gets a fresh fencing token (a global sequence, so tokens strictly
-- increase) that every later write must carry, and a lease of the step's lease_s, else p_lease_s
-- seconds, stored on the attempt so heartbeat and reclaim never recompute it from configuration
-- (C16). First reclaims at most settings.reclaim_in_claim expired leases, so recovery does not
-- wait for cron (a reclaimed row that raises ends alone, issue 14). p_batch_size 1 to 100000,
-- p_lease_s 0.001 to 604800. p_recipes limits the recipes (null: any). options: start (boolean, default
-- false): the attempts go straight to running, as if start_step had been called, which saves the
-- worker one round trip and one commit per step.
-- Locking: FOR UPDATE SKIP LOCKED on the ready rows, so concurrent claimers never block on or
-- share a row; try-locks for capped workspaces and concurrency keys; the one lock a claimer waits
-- for is the global cap's, taken first and alone (see internals/_fair_claim).
-- Errors: 22023 bad batch size or lease, ZF005 batch size or lease over settings.max_batch_size /
-- max_lease_s, ZF010 unknown or stopped worker or one of another login. Claims only steps of the
-- workspaces the login has the worker lane on (docs/security.md#tenancy).
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
set search_path = pg_catalog, pg_temp
set enable_sort = off
set jit = off
as $$
declare
  v_now timestamptz := pgflight._now();
  v_reclaim integer;
  v_start boolean;
  v_settings pgflight.settings;
  v_ws bigint[];
begin
  -- Issue 18: the options validator and the argument helpers each cost a function call with its
  -- own settings (a GUC save and restore): the start option alone, and arguments inside every
  -- bound, are read here directly; anything else goes through the helpers, which raise the error.
  if p_options = '{}' then
    v_start := false;
  elsif p_options - 'start' = '{}' and jsonb_typeof(p_options -> 'start') = 'boolean' then
    v_start := (p_options ->> 'start')::boolean;
  else
    v_start := coalesce((pgflight._check_options('claim_batch', p_options) ->> 'start')::boolean, false);
  end if;
  select * into v_settings from pgflight.settings;
  -- 604800 = _limit('lease_s'); NaN, null and infinity fail these comparisons and take the slow path
  if not coalesce(p_batch_size between 1 and least(v_settings.max_batch_size, 100000)
                  and p_lease_s >= 0.001 and p_lease_s <= least(v_settings.max_lease_s, 604800)
                  and p_lease_s <> 'NaN'::double precision, false) then
    perform pgflight._require_positive('batch_size', p_batch_size);
    perform pgflight._require_positive('lease_s', p_lease_s);
    -- Issue 13: caps on the batch and the lease (claim_batch(2^31-1, 1e9) took every ready step
    -- until 2058).
    perform pgflight._require_cap('max_batch_size', v_settings.max_batch_size, p_batch_size, 'batch_size');
    perform pgflight._require_cap('max_lease_s', v_settings.max_lease_s, p_lease_s, 'lease_s (seconds)');
    -- issue 14: the hard bounds whatever the caps say (NaN, a lease past _limit('lease_s')): 22023
    perform pgflight._check_arg('batch_size', p_batch_size, 1, 100000);
    perform pgflight._check_arg('lease_s', p_lease_s, 0.001, pgflight._limit('lease_s'));
  end if;
  -- the workspaces this login may work in: null (every workspace: the single-tenant case) leaves
  -- the claim query as it was; otherwise each candidate row costs one probe of runs by primary key.
  v_ws := pgflight._lane_workspaces('worker');
  -- the worker must be live and registered by this login (issue 13); another login's id is unknown here
  update pgflight.workers set last_seen_at = v_now
   where id = p_worker_id and stopped_at is null and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown or stopped worker %s', p_worker_id),
      detail = format('no live worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Call register_worker first and use the id it returns.';
  end if;
  v_reclaim := v_settings.reclaim_in_claim;
  if v_reclaim > 0 then
    perform pgflight._reclaim(v_now, v_reclaim);
  end if;

  -- the fair claim across workspaces, with caps, keys, rate limits and pause (internals/_fair_claim),
  -- over the workspaces of the login's worker lane (v_ws; null: every workspace)
  return query select * from pgflight._claim_fair(p_worker_id, p_batch_size, p_lease_s, p_recipes, v_start, v_now, v_ws);
end
$$;
comment on function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) is
  'Lease up to p_batch_size ready attempts (lease in seconds). Returns at most p_batch_size rows, '
  'each with its fencing token, from the login''s workspaces. Options (docs/options.md): start (boolean). '
  'Errors: 22023, ZF005, ZF010 unknown worker.';
grant execute on function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) to pgflight_worker;

commit;
