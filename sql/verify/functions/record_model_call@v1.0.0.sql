-- Verify pgflight:functions/record_model_call@v1.0.0
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb, numeric)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off', 'jit=off']::text[] then
    raise exception 'pgflight.record_model_call(bigint, bigint, bigint, integer, jsonb, jsonb, text, jsonb, numeric) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off', 'jit=off']::text[];
  end if;
end
$verify$;
