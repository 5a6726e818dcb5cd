-- Verify pgflight:internals/_price_of
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._price_of(pgflight.model_prices, bigint, bigint, bigint, bigint, bigint, bigint)'::regprocedure;
  if v_config is distinct from null::text[] then
    raise exception 'pgflight._price_of(pgflight.model_prices, bigint, bigint, bigint, bigint, bigint, bigint) has settings %, expected %', v_config, null::text[];
  end if;
end
$verify$;
