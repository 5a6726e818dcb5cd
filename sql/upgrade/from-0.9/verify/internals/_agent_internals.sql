-- Verify pgflight:internals/_agent_internals
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._seq_band_tool_results()'::regprocedure;
  if v_config is distinct from null::text[] then
    raise exception 'pgflight._seq_band_tool_results() has settings %, expected %', v_config, null::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._seq_band_system()'::regprocedure;
  if v_config is distinct from null::text[] then
    raise exception 'pgflight._seq_band_system() has settings %, expected %', v_config, null::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._agent_fence(bigint, bigint, bigint, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'jit=off']::text[] then
    raise exception 'pgflight._agent_fence(bigint, bigint, bigint, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'jit=off']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._price_of(pgflight.model_prices, bigint, bigint, bigint, bigint, bigint, bigint)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._price_of(pgflight.model_prices, bigint, bigint, bigint, bigint, bigint, bigint) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._usage_extras(jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._usage_extras(jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._price_usd(text, jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._price_usd(text, jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._store_tool_results(bigint, bigint, jsonb, timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off', 'jit=off']::text[] then
    raise exception 'pgflight._store_tool_results(bigint, bigint, jsonb, timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off', 'jit=off']::text[];
  end if;
end
$verify$;
