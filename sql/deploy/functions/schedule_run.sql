-- Deploy pgflight:functions/schedule_run

begin;

set local role pgflight_owner;

-- Create or replace (by workspace and name) a recurring run: every instant the cron expression
-- allows, the sweep submits a run of p_recipe with p_input. options: time_zone (IANA name, default
-- UTC: the wall clock the fields are read on), overlap (skip | queue_one | allow, default skip:
-- what a firing does while the schedule's previous run is still running), run_options (an object
-- of submit_run options for each run, e.g. priority, max_attempts; idempotency_key and
-- submitted_by are the schedule's own). The expression and the run options are checked here, so
-- the sweep never meets a schedule it cannot fire. Returns the schedule and its next firing.
-- Caps (settings, docs/security.md#caps): a new name is refused once the workspace holds
-- settings.max_schedules_per_workspace schedules, and an expression whose two closest firings are
-- less than settings.min_schedule_interval_s apart is refused: the times of day it allows
-- (hours x minutes x seconds, read on the schedule's wall clock), each to the next and the last
-- round midnight to the first. So one operator cannot make every sweep pass fire thousands of
-- runs. The workspace row is locked (FOR NO KEY UPDATE, which foreign key checks do not wait
-- for) while the schedules are counted, so two calls cannot both take the last place.
-- Errors: 22023 bad expression, zone, option or run option; ZF003 unknown workspace; ZF005 a cap.
CREATE OR REPLACE FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb DEFAULT '{}'::jsonb, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(schedule_id bigint, next_fire_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint := pgflight._workspace_id(p_workspace);
  v_now timestamptz := pgflight._now();
  v_tz text;
  v_overlap text;
  v_run_options jsonb;
  v_cron record;
  v_next timestamptz;
  v_id bigint;
  v_max_schedules integer;
  v_min_interval double precision;
  v_gap integer;
  v_count integer;
begin
  perform pgflight._require_lane('operator', v_ws, 'schedule_run');  -- tenants
  perform pgflight._require_known_keys(coalesce(p_options, '{}'), array['time_zone', 'overlap', 'run_options']);
  if p_name is null or btrim(p_name) = '' or length(p_name) > 200 then
    raise exception using errcode = '22023', message = 'schedule name is required',
      hint = 'Pass a non-blank name of at most 200 characters; the same name replaces the schedule.';
  end if;
  v_tz := coalesce(pgflight._opt_text(p_options, 'time_zone', null), 'UTC');
  begin
    perform v_now at time zone v_tz;
  exception when others then
    raise exception using errcode = '22023', message = format('unknown time zone %L', v_tz),
      hint = 'Pass an IANA zone name such as Europe/Paris or America/New_York.';
  end;
  v_overlap := coalesce(pgflight._opt_text(p_options, 'overlap', null), 'skip');
  if v_overlap not in ('skip', 'queue_one', 'allow') then
    raise exception using errcode = '22023', message = format('unknown overlap policy %L', v_overlap),
      hint = 'overlap is skip, queue_one or allow.';
  end if;
  v_run_options := coalesce(p_options -> 'run_options', '{}');
  if jsonb_typeof(v_run_options) <> 'object' or v_run_options ?| array['idempotency_key', 'submitted_by', 'not_before'] then
    raise exception using errcode = '22023', message = 'run_options must be an object of submit_run options',
      detail = format('got %s', v_run_options),
      hint = 'idempotency_key, submitted_by and not_before are set by the schedule.';
  end if;
  select * into v_cron from pgflight._cron_parse(p_cron);
  -- the shortest gap between two firings the expression allows (seconds)
  select s.max_schedules_per_workspace, s.min_schedule_interval_s into v_max_schedules, v_min_interval
    from pgflight.settings s;
  with t as (
    select h * 3600 + m * 60 + x as t
      from unnest(v_cron.hours) h, unnest(v_cron.minutes) m, unnest(v_cron.seconds) x
  ), g as (
    select t.t - lag(t.t) over (order by t.t) as gap from t
    union all
    select 86400 - max(t.t) + min(t.t) from t
  )
  select min(g.gap)::integer into v_gap from g;
  if v_gap < v_min_interval then
    raise exception using
      errcode = 'ZF005',
      message = format('cron expression %L fires more often than settings.min_schedule_interval_s', p_cron),
      detail  = format('two of its firings are %s s apart; settings.min_schedule_interval_s is %s', v_gap, v_min_interval),
      hint    = 'Fire less often (a wider step in the seconds or minutes field), or raise the floor: '
                'UPDATE pgflight.settings SET min_schedule_interval_s = ...';
  end if;
  v_next := pgflight._cron_next(v_cron.seconds, v_cron.minutes, v_cron.hours, v_cron.days, v_cron.months,
                                v_cron.weekdays, v_cron.any_day, v_cron.any_weekday, v_tz, v_now);
  if v_next is null then
    raise exception using errcode = '22023', message = format('cron expression %L never fires', p_cron),
      hint = 'Check the day and month fields (e.g. 30 February does not exist).';
  end if;
  -- a new name: the workspace's schedules under the cap, counted under its row's lock
  perform from pgflight.workspaces w where w.id = v_ws for no key update;
  if not exists (select from pgflight.schedules s where s.workspace_id = v_ws and s.name = p_name) then
    select count(*)::integer into v_count
      from (select from pgflight.schedules s where s.workspace_id = v_ws limit v_max_schedules) x;
    if v_count >= v_max_schedules then
      raise exception using
        errcode = 'ZF005',
        message = format('workspace %s over the cap settings.max_schedules_per_workspace', p_workspace),
        detail  = format('workspace %s has %s schedules; settings.max_schedules_per_workspace is %s',
                         p_workspace, v_count, v_max_schedules),
        hint    = 'Remove a schedule (unschedule_run), reuse a name to replace one, or raise the cap: '
                  'UPDATE pgflight.settings SET max_schedules_per_workspace = ...';
    end if;
  end if;
  -- a dry run of the submit each firing will make, rolled back: the sweep never meets a refusal
  begin
    perform pgflight.submit_run(p_workspace, p_recipe, coalesce(p_input, '{}'), v_run_options);
    raise exception using errcode = 'ZF999';
  exception when sqlstate 'ZF999' then
    null;
  end;

  insert into pgflight.schedules as s (workspace_id, name, cron, time_zone, recipe, input, run_options, overlap,
                                       seconds, minutes, hours, days, months, weekdays, any_day, any_weekday,
                                       next_fire_at, created_by)
  values (v_ws, p_name, p_cron, v_tz, p_recipe, coalesce(p_input, '{}'), v_run_options, v_overlap,
          v_cron.seconds, v_cron.minutes, v_cron.hours, v_cron.days, v_cron.months, v_cron.weekdays,
          v_cron.any_day, v_cron.any_weekday, v_next, session_user::text)
  on conflict on constraint schedule_name_is_unique_per_workspace do update
     set cron = excluded.cron, time_zone = excluded.time_zone, recipe = excluded.recipe, input = excluded.input,
         run_options = excluded.run_options, overlap = excluded.overlap, seconds = excluded.seconds,
         minutes = excluded.minutes, hours = excluded.hours, days = excluded.days, months = excluded.months,
         weekdays = excluded.weekdays, any_day = excluded.any_day, any_weekday = excluded.any_weekday,
         next_fire_at = excluded.next_fire_at, pending_fire_at = null, updated_at = v_now
  returning s.id into v_id;
  return query select v_id, v_next;
end
$$;

COMMENT ON FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb) IS 'Create or replace a recurring run (cron, recipe, input; options time_zone, overlap, run_options). Returns (schedule_id, next_fire_at). At most settings.max_schedules_per_workspace schedules a workspace, firings at least settings.min_schedule_interval_s apart. Errors: 22023, ZF003, ZF005.';

REVOKE ALL ON FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.schedule_run(p_workspace text, p_name text, p_cron text, p_recipe text, p_input jsonb, p_options jsonb) TO pgflight_operator;

commit;
