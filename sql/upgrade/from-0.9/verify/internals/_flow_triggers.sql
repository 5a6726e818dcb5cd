-- Verify pgflight:internals/_flow_triggers
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._fill_attempt_flow()'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off']::text[] then
    raise exception 'pgflight._fill_attempt_flow() has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._key_slot_freed()'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._key_slot_freed() has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._return_slots()'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._return_slots() has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._take_slots_all(bigint[], integer[])'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan']::text[] then
    raise exception 'pgflight._take_slots_all(bigint[], integer[]) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._give_slots_back(bigint[], smallint[], integer[])'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan']::text[] then
    raise exception 'pgflight._give_slots_back(bigint[], smallint[], integer[]) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._set_slot_cap(bigint, integer)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._set_slot_cap(bigint, integer) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
