-- Deploy pgflight:cron/uninstall_schedules
-- Installing the sweeps under pg_cron. Runs with the caller's rights (scheduling needs pg_cron's
-- own privileges, which pgflight_owner does not have); jobs run as the role that installed them.
begin;
set local role pgflight_owner;

-- Remove pgflight's cron jobs (and nothing else). Returns how many were removed.
create or replace function pgflight.uninstall_schedules()
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
