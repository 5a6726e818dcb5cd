-- Deploy pgflight:functions/fire_schedules

begin;

set local role pgflight_owner;

-- Sweep: fire the schedules that are due, at most p_limit of each kind per call; returns the
-- firings decided. Part of run_sweeps, so pg_cron's sweep drives it (no second scheduler).
--
-- Once: a firing is keyed by (schedule, fire time) in schedule_fires, and its run by the
-- idempotency key schedule:<id>:<fire time>; the schedule row is locked (SKIP LOCKED) and its
-- next_fire_at advanced in the same transaction, so two sweeps at once, or one run twice at the
-- same instant, fire it once.
-- Catch-up after downtime: the firings missed while nothing swept are coalesced into one run,
-- fired at once, whose fire time is the first missed instant (missed_until records the end of the
-- gap); the schedule then resumes at its next instant after now. So an hour of downtime under
-- "* * * * *" gives one run, not sixty.
-- Overlap (the previous run of the schedule still running): skip records the firing as skipped;
-- queue_one holds it (at most one, the latest) and submits it when that run ends; allow submits.
-- A refused submit (e.g. the recipe's workspace was deleted meanwhile) is recorded as failed
-- with its error, and the schedule goes on: one bad schedule never stops the sweep.
CREATE OR REPLACE FUNCTION pgflight.fire_schedules(p_limit integer DEFAULT 100) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_s record;
  v_fire timestamptz;
  v_next timestamptz;
  v_busy boolean;
  v_outcome text;
  v_run bigint;
  v_error jsonb;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'fire_schedules');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- a negative LIMIT would raise 2201W below
  -- queue_one firings whose previous run has ended
  for v_s in
    select s.*, w.name as workspace from pgflight.schedules s join pgflight.workspaces w on w.id = s.workspace_id
     where s.pending_fire_at is not null
       and not exists (select from pgflight.runs r where r.id = s.last_run_id and r.status = 'running')
     order by s.pending_fire_at
     limit p_limit
       for update of s skip locked
  loop
    v_run := pgflight._fire_schedule(v_s.id, v_s.workspace, v_s.name, v_s.recipe, v_s.input, v_s.run_options,
                                     v_s.pending_fire_at);
    update pgflight.schedules s set pending_fire_at = null, last_run_id = coalesce(v_run, s.last_run_id)
     where s.id = v_s.id;
    v_count := v_count + 1;
  end loop;

  for v_s in
    select s.*, w.name as workspace from pgflight.schedules s join pgflight.workspaces w on w.id = s.workspace_id
     where s.next_fire_at <= v_now
     order by s.next_fire_at
     limit p_limit
       for update of s skip locked
  loop
    v_fire := v_s.next_fire_at;
    v_next := pgflight._cron_next(v_s.seconds, v_s.minutes, v_s.hours, v_s.days, v_s.months, v_s.weekdays,
                                  v_s.any_day, v_s.any_weekday, v_s.time_zone, v_now);
    v_busy := exists (select from pgflight.runs r where r.id = v_s.last_run_id and r.status = 'running');
    v_run := null;
    v_outcome := case when not v_busy or v_s.overlap = 'allow' then 'submitted'
                      when v_s.overlap = 'skip' then 'skipped' else 'queued' end;
    insert into pgflight.schedule_fires (schedule_id, fire_at, fired_at, outcome, missed_until)
    values (v_s.id, v_fire, v_now, v_outcome,
            -- more than this one firing fell due: they are all this run
            case when pgflight._cron_next(v_s.seconds, v_s.minutes, v_s.hours, v_s.days, v_s.months, v_s.weekdays,
                                          v_s.any_day, v_s.any_weekday, v_s.time_zone, v_fire) <= v_now
                 then v_now end)
    on conflict on constraint schedule_fires_pkey do nothing;
    if found then
      if v_outcome = 'submitted' then
        v_run := pgflight._fire_schedule(v_s.id, v_s.workspace, v_s.name, v_s.recipe, v_s.input, v_s.run_options, v_fire);
      end if;
      v_count := v_count + 1;
    end if;
    update pgflight.schedules s
       set next_fire_at = v_next, last_fire_at = v_fire, last_run_id = coalesce(v_run, s.last_run_id),
           pending_fire_at = case when v_outcome = 'queued' then v_fire else s.pending_fire_at end
     where s.id = v_s.id;
  end loop;
  return v_count;
end
$$;

COMMENT ON FUNCTION pgflight.fire_schedules(p_limit integer) IS 'Sweep: fire due schedules once each (by schedule and fire time), with catch-up and overlap policies; returns firings decided. Errors: 22023 negative p_limit, ZF012.';

REVOKE ALL ON FUNCTION pgflight.fire_schedules(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fire_schedules(p_limit integer) TO pgflight_operator;

commit;
