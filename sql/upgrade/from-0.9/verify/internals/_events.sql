-- Verify pgflight:internals/_events
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._notify_ready()'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._notify_ready() has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
