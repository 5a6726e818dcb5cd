-- A session acting as pgflight_worker, with no table privileges, runs a whole step through the
-- SECURITY DEFINER API: register, claim, start, heartbeat, complete. Reading a table directly is
-- refused.
begin;
\ir ../_helpers.psql
select plan(4);

select run_id, step_id from pgflight.submit_run('test', 'r', '{}') \gset
set local role pgflight_worker;
select pgflight.register_worker('as-role') as wr \gset
select attempt_id, fencing_token from pgflight.claim_batch(:wr, 1, 30) \gset
select status as hb from pgflight.heartbeat(:wr, array[:attempt_id]::bigint[], array[:fencing_token]::bigint[]) \gset
select status as done from pgflight.complete_step(:attempt_id, :fencing_token, '{"by": "worker role"}') \gset
select has_table_privilege('pgflight.steps', 'SELECT') as can_read \gset
reset role;

select is(:'hb'::text, 'held', 'heartbeat as pgflight_worker renews the lease');
select is(:'done'::text, 'succeeded', 'complete_step as pgflight_worker succeeds');
select is((select status from pgflight.runs where id = :run_id), 'succeeded', 'the run finished');
select ok(not :'can_read'::boolean, 'the worker session cannot read the tables');

select * from finish();
rollback;
