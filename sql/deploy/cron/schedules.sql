-- Deploy pgflight:cron/schedules
-- requires: functions/sweeps cron_extension
-- Installing the sweeps under pg_cron. Runs with the caller's rights (scheduling needs pg_cron's
-- own privileges, which pgflight_owner does not have); jobs run as the role that installed them.
begin;
set local role pgflight_owner;

-- Run every sweep, COMMIT, sleep, for about p_duration_s seconds. pg_cron 1.4 schedules by the
-- minute only; a job that CALLs this once a minute sweeps every p_interval_s seconds, so a dead
-- worker's step is running again within lease + a few seconds (invariant 4).
-- No SET clause: a procedure with one may not COMMIT, so every name inside is schema-qualified.
create procedure pgflight.sweep_loop(p_duration_s double precision default 55, p_interval_s double precision default 5)
language plpgsql
as $$
declare
  v_end timestamptz := pg_catalog.clock_timestamp() + make_interval(secs => p_duration_s);
begin
  loop
    perform pgflight.run_sweeps();
    commit;
    exit when pg_catalog.clock_timestamp() + make_interval(secs => p_interval_s) > v_end;
    perform pg_catalog.pg_sleep(p_interval_s);
  end loop;
end
$$;
comment on procedure pgflight.sweep_loop(double precision, double precision) is
  'Sweep every p_interval_s seconds for p_duration_s seconds, committing after each pass (pg_cron 1.4).';

-- Register pgflight's cron jobs; named jobs are upserts, so installing twice changes nothing.
--   pgflight-sweeps         every p_interval_s seconds on pg_cron >= 1.5 ('5 seconds'), else every
--                           minute a sweep_loop of 55 s;
--   pgflight-purge          hourly purge_finished (retention, settings.purge_after_s);
--   pgflight-cron-history   hourly delete of cron.job_run_details older than a day, which pg_cron
--                           otherwise grows by a row per job run.
-- Errors: ZF011 when pg_cron is not installed in this database.
create function pgflight.install_schedules(p_interval_s integer default 5)
returns table (job_name text, schedule text, command text)
language plpgsql volatile
set search_path = ''
as $$
declare
  v_version text;
  v_parts text[];
  v_seconds boolean;
begin
  select e.extversion into v_version from pg_catalog.pg_extension e where e.extname = 'pg_cron';
  if v_version is null then
    raise exception using errcode = 'ZF011', message = 'pg_cron is not installed in this database',
      detail = format('database %s; cron.database_name is %s', current_database(),
                      coalesce(current_setting('cron.database_name', true), 'unset')),
      hint = 'Add pg_cron to shared_preload_libraries, set cron.database_name to this database and CREATE EXTENSION pg_cron; or call pgflight.run_sweeps() from another scheduler.';
  end if;
  perform pgflight._require_positive('interval_s', p_interval_s);
  v_parts := regexp_match(v_version, '^(\d+)\.(\d+)');
  v_seconds := (v_parts[1]::integer, v_parts[2]::integer) >= (1, 5) and p_interval_s < 60;

  job_name := 'pgflight-sweeps';
  if v_seconds then
    schedule := format('%s seconds', p_interval_s);
    command := 'select pgflight.run_sweeps()';
  else
    schedule := '* * * * *';
    command := format('call pgflight.sweep_loop(55, %s)', p_interval_s);
  end if;
  perform cron.schedule(job_name, schedule, command);
  return next;

  job_name := 'pgflight-purge';
  schedule := '17 * * * *';
  command := 'select pgflight.purge_finished()';
  perform cron.schedule(job_name, schedule, command);
  return next;

  job_name := 'pgflight-cron-history';
  schedule := '23 * * * *';
  command := $c$delete from cron.job_run_details where end_time < now() - interval '1 day'$c$;
  perform cron.schedule(job_name, schedule, command);
  return next;
end
$$;
comment on function pgflight.install_schedules(integer) is
  'Register the sweep, retention and cron-history jobs with pg_cron (1.4 or >= 1.5); idempotent. Errors: ZF011.';

-- Remove pgflight's cron jobs (and nothing else). Returns how many were removed.
create function pgflight.uninstall_schedules()
returns integer
language plpgsql volatile
set search_path = ''
as $$
declare
  v_count integer := 0;
  v_name text;
begin
  if not exists (select from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    return 0;
  end if;
  for v_name in select j.jobname from cron.job j where j.jobname like 'pgflight-%' loop
    perform cron.unschedule(v_name);
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
comment on function pgflight.uninstall_schedules() is 'Remove pgflight''s pg_cron jobs; returns how many.';

commit;
