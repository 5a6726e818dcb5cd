-- Every API function (no leading underscore) runs as its owner (SECURITY DEFINER) and every
-- pgflight function with a SET clause pins search_path = pg_catalog, pg_temp: pg_temp explicitly
-- last, so no temporary type, table or view of the caller's session can shadow what the function
-- names (an empty search_path still searches pg_temp first for types and relations).
-- The cron installers are the documented exception to SECURITY DEFINER: they run with the
-- caller's rights, because scheduling needs pg_cron's own privileges. Eight functions have no SET
-- clause: the procedure sweep_loop (a procedure with one may not COMMIT; it names everything
-- schema-qualified and runs as pgflight_cron) and the clock _now(), which must have none to be
-- inlined into the hot paths; so must the inlined constants and checks of the agent's hot path
-- (_seq_band_system, _seq_band_tool_results, _model_call_options_ok, _usage_counts_ok, and the
-- price _price_of, which with one was parsed and planned at every model call), and
-- _settle_model_call runs under record_model_call's settings (a SET clause would save and restore
-- them on every model call). None of those is SECURITY DEFINER or granted to a lane. Everything is owned by pgflight_owner, but the four functions that
-- need a cluster-wide privilege the deploy login must not inherit: those are pgflight_privileged's
-- (roles/pgflight_privileged; when a superuser deployed).
begin;
\ir ../_helpers.psql
select plan(4);

select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace and p.proname !~ '^_' and p.prokind = 'f'
     and p.proname not in ('install_schedules', 'uninstall_schedules')
     and not p.prosecdef$$,
  'every API function is SECURITY DEFINER');
select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace and p.oid <> 'pgflight._now()'::regprocedure
     and p.proname not in ('sweep_loop', '_seq_band_system', '_seq_band_tool_results',
                           '_model_call_options_ok', '_usage_counts_ok', '_settle_model_call', '_price_of')
     and not coalesce('search_path=pg_catalog, pg_temp' = any (p.proconfig), false)$$,
  'every pgflight function but the inlined ones and sweep_loop sets search_path = pg_catalog, pg_temp');
select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace and p.prosecdef
     and not exists (select from unnest(p.proconfig) c where c like 'search_path=%pg_temp')$$,
  'every SECURITY DEFINER function puts pg_temp last in its search_path (from the catalogue)');
select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace and p.proowner <> 'pgflight_owner'::regrole
     and not (p.proowner = (select r.oid from pg_roles r where r.rolname = 'pgflight_privileged')
              and p.oid = any (array['pgflight._vacuum_horizon()', 'pgflight._backend_started_at(integer)',
                                     'pgflight._row_triggers_off()', 'pgflight._row_triggers_on(text)']::regprocedure[]))$$,
  'every pgflight function is owned by pgflight_owner (the four privileged ones by pgflight_privileged)');

select * from finish();
rollback;
