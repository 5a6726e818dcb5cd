-- Verify pgflight:internals/_options@v0.2.0
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._opt_num(jsonb, text, double precision)'::regprocedure;
  if v_config is distinct from array['search_path=""']::text[] then
    raise exception 'pgflight._opt_num(jsonb, text, double precision) has settings %, expected %', v_config, array['search_path=""']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._opt_text(jsonb, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=""']::text[] then
    raise exception 'pgflight._opt_text(jsonb, text, text) has settings %, expected %', v_config, array['search_path=""']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._require_positive(text, double precision)'::regprocedure;
  if v_config is distinct from array['search_path=""']::text[] then
    raise exception 'pgflight._require_positive(text, double precision) has settings %, expected %', v_config, array['search_path=""']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._backoff_s(integer, jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=""']::text[] then
    raise exception 'pgflight._backoff_s(integer, jsonb) has settings %, expected %', v_config, array['search_path=""']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._bad_child_options(jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=""']::text[] then
    raise exception 'pgflight._bad_child_options(jsonb) has settings %, expected %', v_config, array['search_path=""']::text[];
  end if;
end
$verify$;
