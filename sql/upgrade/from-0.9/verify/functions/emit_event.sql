-- Verify pgflight:functions/emit_event
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight.emit_event(text, text, text, jsonb, jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight.emit_event(text, text, text, jsonb, jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
