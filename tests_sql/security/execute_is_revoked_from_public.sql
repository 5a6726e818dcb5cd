-- EXECUTE is revoked from PUBLIC on every pgflight function, so a role gets exactly what it was
-- granted: a worker cannot submit or cancel runs.
--
begin;
\ir ../_helpers.psql
select plan(3);

select is_empty($$
  select p.oid::regprocedure from pg_proc p
   where p.pronamespace = 'pgflight'::regnamespace
     and exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) x
                  where x.grantee = 0 and x.privilege_type = 'EXECUTE')$$,
  'no pgflight function is executable by PUBLIC');
select is_empty($$
  select f from unnest(array['pgflight.submit_run(text,text,jsonb,jsonb)', 'pgflight.cancel_run(bigint,text,text)',
                             'pgflight.approve(bigint,text,text,text,text,jsonb)', 'pgflight.purge_finished(double precision,integer)',
                             'pgflight.set_tool_policy(text,text,jsonb)', 'pgflight.drop_tool_policy(text,text)']) f
   where has_function_privilege('pgflight_worker', f, 'EXECUTE')$$,
  'pgflight_worker cannot execute operator functions');
select ok(not has_schema_privilege('public', 'pgflight', 'USAGE'), 'PUBLIC has no USAGE on schema pgflight');

select * from finish();
rollback;
