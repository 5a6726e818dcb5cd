-- Deploy pgflight:functions/sweeps
-- requires: functions/_lifecycle functions/spawn_children functions/approvals
begin;
set local role pgflight_owner;

-- Sweep: reclaim up to p_limit attempts whose lease lapsed (lease_expired: retry or dead letter;
-- a cancel_requested one becomes cancelled) or whose deadline passed (timed_out). Uses only the
-- stored lease_expires_at and deadline_at (C16). Safe to run concurrently with itself and with
-- claim_batch (SKIP LOCKED). Returns how many attempts it ended.
create function pgflight.reclaim_expired(p_limit integer default 1000)
returns integer
language sql volatile security definer
set search_path = ''
as $$ select pgflight._reclaim(pgflight._now(), p_limit) $$;
comment on function pgflight.reclaim_expired(integer) is
  'Sweep: reclaim expired leases and overrun deadlines, at most p_limit; returns the count.';
grant execute on function pgflight.reclaim_expired(integer) to pgflight_operator;

-- Sweep: delete runs finished more than p_older_than_s seconds ago (default
-- settings.purge_after_s), with their steps, attempts, gates and events, at most p_limit runs per
-- call. Returns the number of runs deleted.
create function pgflight.purge_finished(p_older_than_s double precision default null, p_limit integer default 100)
returns integer
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_ids bigint[];
  v_age double precision;
begin
  v_age := coalesce(p_older_than_s, (select s.purge_after_s from pgflight.settings s));
  select array_agg(r.id) into v_ids from (
    -- a run finishes after it is created, so created_at bounds the scan (runs_created_idx)
    select r.id from pgflight.runs r
     where r.created_at < (select pgflight._now()) - make_interval(secs => v_age)
       and r.finished_at < (select pgflight._now()) - make_interval(secs => v_age)
       -- a cancelled run may still have an attempt whose worker has not acknowledged: keep it
       and not exists (select from pgflight.steps s
                          join pgflight.step_attempts a on a.step_id = s.id
                        where s.run_id = r.id
                          and a.status in ('queued', 'claimed', 'running', 'cancel_requested',
                                           'awaiting_children', 'awaiting_approval'))
     order by r.created_at limit p_limit
       for update skip locked) r;
  if v_ids is null then
    return 0;
  end if;
  delete from pgflight.events e where e.run_id = any (v_ids);
  delete from pgflight.runs r where r.id = any (v_ids);
  return cardinality(v_ids);
end
$$;
comment on function pgflight.purge_finished(double precision, integer) is
  'Sweep: delete finished runs older than p_older_than_s seconds with all their rows; returns the count.';
grant execute on function pgflight.purge_finished(double precision, integer) to pgflight_operator;

-- Every sweep once, each bounded. What pg_cron calls; also callable by hand or any scheduler.
create function pgflight.run_sweeps()
returns table (sweep text, affected integer)
language plpgsql volatile security definer
set search_path = ''
as $$
begin
  return query select 'reclaim_expired'::text, pgflight.reclaim_expired(1000);
  return query select 'wake_parents'::text, pgflight.wake_parents(1000);
  return query select 'expire_approvals'::text, pgflight.expire_approvals(1000);
  return query select 'enforce_budgets'::text, pgflight.enforce_budgets(1000);
end
$$;
comment on function pgflight.run_sweeps() is 'Run every sweep once; returns rows affected per sweep.';
grant execute on function pgflight.run_sweeps() to pgflight_operator;

commit;
