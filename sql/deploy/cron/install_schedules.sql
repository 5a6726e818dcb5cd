-- Deploy pgflight:cron/install_schedules

begin;

set local role pgflight_owner;

-- Register pgflight's cron jobs; named jobs are upserts, so installing twice changes nothing.
--   pgflight-sweeps         on pg_cron >= 1.5 every p_interval_s seconds ('5 seconds') a
--                           sweep_loop(p_interval_s, p_interval_s): one pass, more while a backlog
--                           lasts, with the loop's lock_timeout, error handler and lock; on pg_cron
--                           1.4 every minute a sweep_loop of 60 s, which sweeps on a fixed beat up to
--                           the next call (sweep_loop(55, 5) left a gap each minute);
--                           retention (purge_finished, maintain_partitions) runs in the loop;
--   (pgflight-purge, the hourly purge_finished of earlier versions, is removed: the loop purges
--    in batches every pass);
--   pgflight-cron-history   hourly delete of cron.job_run_details older than a day, which pg_cron
--                           otherwise grows by a row per job run.
-- Errors: ZF011 when pg_cron is not installed in this database.
CREATE OR REPLACE FUNCTION pgflight.install_schedules(p_interval_s integer DEFAULT 5) RETURNS TABLE(job_name text, schedule text, command text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_old bigint;
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

  -- Every job runs as pgflight_cron (not a superuser, not a member of the owner), in this
  -- database, scheduled with cron.schedule_in_database (pg_cron 1.4 and later; scheduling for
  -- another role needs a superuser, which is who installs). Jobs of an earlier install that ran
  -- as another role are removed first. pgflight_cron needs USAGE on schema cron to purge its own
  -- job history (pg_cron's row-level policy limits it to its own rows).
  for v_old in select j.jobid from cron.job j
                where j.jobname like 'pgflight-%' and j.database = current_database()
                  and j.username <> 'pgflight_cron' loop
    perform cron.unschedule(v_old);
  end loop;
  grant usage on schema cron to pgflight_cron;

  job_name := 'pgflight-sweeps';
  if v_seconds then
    schedule := format('%s seconds', p_interval_s);
    command := format('call pgflight.sweep_loop(%s, %s)', p_interval_s, p_interval_s);
  else
    schedule := '* * * * *';
    command := format('call pgflight.sweep_loop(60, %s)', p_interval_s);
  end if;
  perform cron.schedule_in_database(job_name, schedule, command, current_database(), 'pgflight_cron');
  return next;

  for v_old in select j.jobid from cron.job j
                where j.jobname = 'pgflight-purge' and j.database = current_database() loop
    perform cron.unschedule(v_old);
  end loop;

  job_name := 'pgflight-cron-history';
  schedule := '23 * * * *';
  command := $c$delete from cron.job_run_details where end_time < pg_catalog.now() - interval '1 day'$c$;
  perform cron.schedule_in_database(job_name, schedule, command, current_database(), 'pgflight_cron');
  return next;
end
$_$;

COMMENT ON FUNCTION pgflight.install_schedules(p_interval_s integer) IS 'Register the sweep (with retention) and cron-history jobs with pg_cron (1.4 or >= 1.5), run as pgflight_cron; idempotent. Errors: ZF011.';

REVOKE ALL ON FUNCTION pgflight.install_schedules(p_interval_s integer) FROM PUBLIC;

commit;
