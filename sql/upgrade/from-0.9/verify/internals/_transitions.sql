-- Verify pgflight:internals/_transitions
-- Written by scripts/gen_sql_scripts.py: signatures and their settings.
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._wake(bigint, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._wake(bigint, text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._cancel_steps(bigint[], text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._cancel_steps(bigint[], text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._cancel_tree(bigint, bigint, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._cancel_tree(bigint, bigint, text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._tree_steps(bigint, bigint)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._tree_steps(bigint, bigint) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._steps_finished(bigint[], text[], text, timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[] then
    raise exception 'pgflight._steps_finished(bigint[], text[], text, timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._step_finished(bigint, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._step_finished(bigint, text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._fail_attempt(bigint, text, text, jsonb, boolean, double precision, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._fail_attempt(bigint, text, text, jsonb, boolean, double precision, text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._cascade_root(bigint)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._cascade_root(bigint) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._lock_subtree(bigint, boolean)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._lock_subtree(bigint, boolean) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._lock_cascade(bigint, boolean)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._lock_cascade(bigint, boolean) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._dead_letter_poisoned(bigint, text, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._dead_letter_poisoned(bigint, text, text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._reclaim(timestamptz, integer)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._reclaim(timestamptz, integer) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._reclaim_picked(timestamptz, bigint[])'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off']::text[] then
    raise exception 'pgflight._reclaim_picked(timestamptz, bigint[]) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'enable_seqscan=off', 'enable_hashjoin=off', 'enable_mergejoin=off']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._complete_many(bigint[], bigint[], jsonb[], timestamptz)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[] then
    raise exception 'pgflight._complete_many(bigint[], bigint[], jsonb[], timestamptz) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp', 'plan_cache_mode=force_generic_plan', 'enable_seqscan=off']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._complete_refusing(bigint[], bigint[], jsonb[], jsonb[])'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._complete_refusing(bigint[], bigint[], jsonb[], jsonb[]) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._decide(bigint, text, text, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._decide(bigint, text, text, text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
do $verify$
declare
  v_config text[];
begin
  select p.proconfig into v_config
    from pg_catalog.pg_proc p where p.oid = 'pgflight._reopen_step(bigint, text, text, text)'::regprocedure;
  if v_config is distinct from array['search_path=pg_catalog, pg_temp']::text[] then
    raise exception 'pgflight._reopen_step(bigint, text, text, text) has settings %, expected %', v_config, array['search_path=pg_catalog, pg_temp']::text[];
  end if;
end
$verify$;
