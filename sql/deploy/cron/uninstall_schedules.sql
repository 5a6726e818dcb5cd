-- Deploy pgflight:cron/uninstall_schedules

begin;

set local role pgflight_owner;

-- Remove pgflight's cron jobs (and nothing else). Returns how many were removed.
CREATE OR REPLACE FUNCTION pgflight.uninstall_schedules() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_count integer := 0;
  v_id bigint;
begin
  if not exists (select from pg_catalog.pg_extension e where e.extname = 'pg_cron') then
    return 0;
  end if;
  -- by job id: the jobs run as pgflight_cron, so unschedule(name), which looks for the
  -- caller's own job of that name, would not find them
  for v_id in select j.jobid from cron.job j
               where j.jobname like 'pgflight-%' and j.database = current_database() loop
    perform cron.unschedule(v_id);
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;

COMMENT ON FUNCTION pgflight.uninstall_schedules() IS 'Remove pgflight''s pg_cron jobs; returns how many.';

REVOKE ALL ON FUNCTION pgflight.uninstall_schedules() FROM PUBLIC;

commit;
