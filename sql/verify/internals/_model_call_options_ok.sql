-- Verify pgflight:internals/_model_call_options_ok
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._model_call_options_ok(jsonb)'::regprocedure;
  if v_config is distinct from null::text[] then
    raise exception 'pgflight._model_call_options_ok(jsonb) has settings %, expected %', v_config, null::text[];
  end if;
end
$verify$;
