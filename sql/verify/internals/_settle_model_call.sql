-- Verify pgflight:internals/_settle_model_call
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._settle_model_call(pgflight.agent_runs, integer, numeric, boolean, boolean, numeric, bigint[], timestamp with time zone)'::regprocedure;
  if v_config is distinct from null::text[] then
    raise exception 'pgflight._settle_model_call(pgflight.agent_runs, integer, numeric, boolean, boolean, numeric, bigint[], timestamp with time zone) has settings %, expected %', v_config, null::text[];
  end if;
end
$verify$;
