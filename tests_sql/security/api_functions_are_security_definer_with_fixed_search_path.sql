-- Every API function (no leading underscore) runs as its owner (SECURITY DEFINER) and every
-- pgflight function has a fixed, empty search_path, so no caller can hijack name lookup. The
-- cron installers are the documented exception: they run with the caller's rights, because
-- scheduling needs pg_cron's own privileges; the procedure sweep_loop has no SET clause because a
-- procedure with one cannot COMMIT, and it names everything schema-qualified instead; so does
-- the clock _now(), which must have no SET clause to be inlined into the hot paths.
-- Everything is owned by pgflight_owner.
begin;
\ir ../_helpers.psql
select plan(3);

select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace and p.proname !~ '^_' and p.prokind = 'f'
     and p.proname not in ('install_schedules', 'uninstall_schedules')
     and not p.prosecdef$$,
  'every API function is SECURITY DEFINER');
select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace and p.prokind = 'f' and p.proname <> '_now'
     and not coalesce('search_path=""' = any (p.proconfig), false)$$,
  'every pgflight function but the inlined clock sets search_path to empty');
select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace and p.proowner <> 'pgflight_owner'::regrole$$,
  'every pgflight function is owned by pgflight_owner');

select * from finish();
rollback;
