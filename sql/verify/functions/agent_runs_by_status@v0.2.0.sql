-- Verify pgflight:functions/agent_runs_by_status@v0.2.0
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight.agent_runs_by_status(text, bigint, integer)'::regprocedure;
  if v_config is distinct from array['search_path=""']::text[] then
    raise exception 'pgflight.agent_runs_by_status(text, bigint, integer) has settings %, expected %', v_config, array['search_path=""']::text[];
  end if;
end
$verify$;
