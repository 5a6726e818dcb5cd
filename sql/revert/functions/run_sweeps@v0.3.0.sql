-- Revert pgflight:functions/run_sweeps@v0.3.0: restores the previous definition, deploy/functions/run_sweeps@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Every sweep once, each bounded. What pg_cron calls; also callable by hand or any scheduler.
create or replace function pgflight.run_sweeps()
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
