-- Revert pgflight:functions/claim_batch@v0.3.0: restores the previous definition, deploy/functions/claim_batch@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Lease up to p_batch_size ready attempts to a worker, highest priority first, then oldest.
-- Each claimed attempt gets a fresh fencing token (a global sequence, so tokens strictly
-- increase) that every later write must carry, and a lease of the step's lease_s, else p_lease_s
-- seconds, stored on the attempt so heartbeat and reclaim never recompute it from configuration
-- (C16). First reclaims at most settings.reclaim_in_claim expired leases, so recovery does not
-- wait for cron. p_recipes limits the recipes (null: any). options: start (boolean, default
-- false): the attempts go straight to running, as if start_step had been called, which saves the
-- worker one round trip and one commit per step.
-- Locking: FOR UPDATE SKIP LOCKED on the ready rows, so concurrent claimers never block on or
-- share a row; the UPDATE re-checks nothing else because the lock is held until commit.
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

  return query
  with ready as (
    -- only queued rows that are due, in claim order; rows another claimer holds are skipped
    select a.id
      from pgflight.step_attempts a
     where a.status = 'queued' and a.available_after <= v_now
       and (p_recipes is null or a.recipe = any (p_recipes))
     order by a.priority desc, a.available_after, a.id
     limit p_batch_size
       for update skip locked
  ), claimed as (
    update pgflight.step_attempts a
       set status = case when v_start then 'running' else 'claimed' end, worker_id = p_worker_id,
           fencing_token = nextval('pgflight.fencing_tokens'),
           claimed_at = v_now,
           started_at = case when v_start then v_now end,
           lease_s = coalesce(s.lease_s, p_lease_s),
           lease_expires_at = v_now + make_interval(secs => coalesce(s.lease_s, p_lease_s)),
           deadline_at = v_now + make_interval(secs => s.max_runtime_s)
      from ready r, pgflight.steps s
     where a.id = r.id and s.id = a.step_id
    returning a.id, a.fencing_token, a.step_id, a.run_id, s.parent_id, s.step_key, a.attempt_no,
              a.recipe, s.input, a.lease_expires_at, a.deadline_at, a.priority, a.status
  ), logged as (
    -- the events row of every claim, in the same statement
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
    select v_now, c.run_id, c.step_id, c.id, 'queued', c.status, p_worker_id, 'claimed' from claimed c
  )
  select c.id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no, c.recipe,
         c.input, c.lease_expires_at, c.deadline_at
    from claimed c
   order by c.priority desc, c.id;
end
$$;
comment on function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) is
  'Lease up to p_batch_size ready attempts (lease in seconds). Returns at most p_batch_size rows, '
  'each with its fencing token. Errors: 22023, ZF010 unknown worker.';
grant execute on function pgflight.claim_batch(bigint, integer, double precision, text[], jsonb) to pgflight_worker;

commit;
