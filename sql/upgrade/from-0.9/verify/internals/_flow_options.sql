-- Verify pgflight:internals/_flow_options
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._require_known_keys(jsonb, text[])'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._require_known_keys(jsonb, text[]) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._limit_option(jsonb, text, double precision, double precision, boolean)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._limit_option(jsonb, text, double precision, double precision, boolean) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._workspace_id(text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._workspace_id(text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._start_at(jsonb, timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._start_at(jsonb, timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._concurrency_option(jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._concurrency_option(jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._bad_child_flow(jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._bad_child_flow(jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._set_paused(text, text, boolean, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._set_paused(text, text, boolean, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
