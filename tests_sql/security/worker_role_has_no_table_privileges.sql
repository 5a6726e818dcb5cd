-- pgflight_worker works through the API only: no privilege on any pgflight table or sequence,
-- EXECUTE on the worker functions. pgflight_reader sees views only.
begin;
\ir ../_helpers.psql
select plan(5);

select is_empty($$
  select c.oid::regclass, p.priv
    from pg_class c
    cross join unnest(array['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p(priv)
   where c.relnamespace = 'pgflight'::regnamespace and c.relkind in ('r', 'p')
     and has_table_privilege('pgflight_worker', c.oid, p.priv)$$,
  'pgflight_worker has no privilege on any pgflight table');
select is_empty($$
  select c.oid::regclass from pg_class c
   where c.relnamespace = 'pgflight'::regnamespace and c.relkind = 'S'
     and case when c.relkind = 'S' then has_sequence_privilege('pgflight_worker', c.oid, 'USAGE,SELECT,UPDATE') else false end$$,
  'pgflight_worker has no privilege on any pgflight sequence');
select is_empty($$
  select c.oid::regclass from pg_class c
   where c.relnamespace = 'pgflight'::regnamespace and c.relkind in ('r', 'p')
     and has_table_privilege('pgflight_reader', c.oid, 'SELECT')$$,
  'pgflight_reader cannot read the tables');
select ok(has_table_privilege('pgflight_reader', 'pgflight.step_status', 'SELECT'), 'pgflight_reader reads the views');
select is_empty($$
  select f from unnest(array[
    'pgflight.register_worker(text,jsonb)', 'pgflight.claim_batch(bigint,integer,double precision,text[],jsonb)',
    'pgflight.start_step(bigint,bigint)', 'pgflight.heartbeat(bigint,bigint[],bigint[])',
    'pgflight.complete_step(bigint,bigint,jsonb)', 'pgflight.complete_batch(bigint[],bigint[],jsonb[])',
    'pgflight.fail_step(bigint,bigint,jsonb,jsonb)', 'pgflight.release_step(bigint,bigint,text,jsonb)',
    'pgflight.spawn_children(bigint,bigint,jsonb,jsonb)', 'pgflight.request_approval(bigint,bigint,text,jsonb,jsonb)',
    'pgflight.record_stale_write(bigint,bigint,text)', 'pgflight.children_results(bigint)']) f
   where not has_function_privilege('pgflight_worker', f, 'EXECUTE')$$,
  'pgflight_worker can execute every worker API function');

select * from finish();
rollback;
