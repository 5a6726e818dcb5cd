-- Verify pgflight:internals/_budget
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._call_budget_ids(pgflight.agent_runs, timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._call_budget_ids(pgflight.agent_runs, timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._raise_budget_exceeded(jsonb)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._raise_budget_exceeded(jsonb) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamptz, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'jit=off']::text[] then
    raise exception 'pgflight._move_budget(bigint[], numeric, numeric, numeric, boolean, timestamptz, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'jit=off']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._release_reservation(bigint)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'jit=off']::text[] then
    raise exception 'pgflight._release_reservation(bigint) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'jit=off']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._iteration_refusal(pgflight.agent_runs, integer)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._iteration_refusal(pgflight.agent_runs, integer) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._token_estimate(pgflight.agent_runs, bigint)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._token_estimate(pgflight.agent_runs, bigint) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._token_admission(pgflight.agent_runs, bigint, timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._token_admission(pgflight.agent_runs, bigint, timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._settle_tokens(pgflight.agent_runs, bigint, bigint, boolean, timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._settle_tokens(pgflight.agent_runs, bigint, bigint, boolean, timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._reserve(pgflight.agent_runs, bigint, integer, numeric, timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._reserve(pgflight.agent_runs, bigint, integer, numeric, timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
