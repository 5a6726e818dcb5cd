-- Revert pgflight:cron/sweep_loop@v0.3.0: restores the previous definition, deploy/cron/sweep_loop@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
-- Installing the sweeps under pg_cron. Runs with the caller's rights (scheduling needs pg_cron's
-- own privileges, which pgflight_owner does not have); jobs run as the role that installed them.
begin;
set local role pgflight_owner;

-- Run every sweep, COMMIT, sleep, for about p_duration_s seconds. pg_cron 1.4 schedules by the
-- minute only; a job that CALLs this once a minute sweeps every p_interval_s seconds, so a dead
-- worker's step is running again within lease + a few seconds (invariant 4).
-- No SET clause: a procedure with one may not COMMIT, so every name inside is schema-qualified.
create or replace procedure pgflight.sweep_loop(p_duration_s double precision default 55, p_interval_s double precision default 5)
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

commit;
