-- Verify pgflight:functions/record_model_call
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
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._usage_counts_ok(jsonb)'::regprocedure;
  if v_config is distinct from null::text[] then
    raise exception 'pgflight._usage_counts_ok(jsonb) has settings %, expected %', v_config, null::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._settle_model_call(pgflight.agent_runs, integer, numeric, boolean, boolean, numeric, bigint[], timestamptz)'::regprocedure;
  if v_config is distinct from null::text[] then
    raise exception 'pgflight._settle_model_call(pgflight.agent_runs, integer, numeric, boolean, boolean, numeric, bigint[], timestamptz) has settings %, expected %', v_config, null::text[];
  end if;
end
$verify$;
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
