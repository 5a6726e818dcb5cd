-- Tenancy: logins granted lanes on workspace A only. The reader of A sees no row of B
-- in any view (every view of the catalogue with a run_id column) and is refused B's runs; the
-- operator of A cannot cancel, approve or retry in B but can in A; the worker of A never claims
-- B's steps. A login with no grant on B is told of B's runs, steps and name exactly what it is
-- told of unknown ones (ZF003). Roles are created inside the test's transaction and rolled back with it.
begin;
\ir ../_helpers.psql
select plan(13);

create role pgtap_reader_a login in role pgflight_reader;
create role pgtap_operator_a login in role pgflight_operator;
create role pgtap_worker_a login in role pgflight_worker;
select pgflight.create_workspace('A') as ws_a, pgflight.create_workspace('B') as ws_b \gset
select pgflight.grant_workspace('pgtap_reader_a', 'A', 'reader'), pgflight.grant_workspace('pgtap_operator_a', 'A', 'operator'),
       pgflight.grant_workspace('pgtap_worker_a', 'A', 'worker');

-- In each workspace: a queued run, a dead letter, a step parked at a gate.
select run_id as a_queued, step_id as a_queued_step from pgflight.submit_run('A', 'shared', '{}') \gset
select run_id as b_queued, step_id as b_queued_step from pgflight.submit_run('B', 'shared', '{}') \gset
select run_id as b_dead, step_id as b_dead_step from pgflight.submit_run('B', 'dies', '{}', '{"max_attempts": 1}') \gset
select attempt_id as d, token as dt from pgflight_test.take(:w1, 'dies') \gset
select pgflight.fail_step(:d, :dt, '{"m": "x"}');
select run_id as b_gate, step_id as b_gate_step from pgflight.submit_run('B', 'gated', '{}') \gset
select attempt_id as g, token as gt from pgflight_test.take(:w1, 'gated') \gset
select pgflight.request_approval(:g, :gt, 'send');

-- Rows of B's runs that each readable view shows to the current login.
create function pgflight_test.rows_of(p_runs bigint[])
returns table (view_name text, n bigint)
language plpgsql as $$
declare
  v regclass;
begin
  for v in select c.oid::regclass from pg_class c
            where c.relnamespace = 'pgflight'::regnamespace and c.relkind = 'v'
              and exists (select from pg_attribute a where a.attrelid = c.oid and a.attname = 'run_id')
              and has_table_privilege(c.oid, 'SELECT') loop
    view_name := v::text;
    execute format('select count(*) from %s where run_id = any ($1)', v) into n using p_runs;
    return next;
  end loop;
end
$$;
grant usage on schema pgflight_test to public;

set local session authorization pgtap_reader_a;
select ok((select count(*) from pgflight_test.rows_of(array[:b_queued, :b_dead, :b_gate]::bigint[])) >= 4,
          'the reader of A reads every view with a run_id');
select is_empty($$select * from pgflight_test.rows_of(array[$$ || :b_queued || ',' || :b_dead || ',' || :b_gate || $$]::bigint[]) where n > 0$$,
                'the reader of A sees no row of B in any view');
select isnt_empty(format('select * from pgflight.run_list where run_id = %s', :a_queued), 'and sees its own workspace''s runs');
select throws_ok(format('select * from pgflight.run_status(%s)', :b_queued), 'ZF003', format('unknown run %s', :b_queued),
                 'run_status of a run of B answers as an unknown run');
reset session authorization;

set local session authorization pgtap_operator_a;
select throws_ok(format('select * from pgflight.cancel_run(%s)', :b_queued), 'ZF003', format('unknown run %s', :b_queued),
                 'the operator of A cannot cancel in B');
select throws_ok(format('select * from pgflight.approve(%s, %L, %L)', :b_gate_step, 'approve', 'x'), 'ZF003', format('unknown step %s', :b_gate_step),
                 'nor approve in B');
select throws_ok(format('select pgflight.retry_step(%s)', :b_dead_step), 'ZF003', format('unknown step %s', :b_dead_step), 'nor retry in B');
select throws_ok($$select * from pgflight.submit_run('B', 'x', '{}')$$, 'ZF003', $$unknown workspace 'B'$$, 'nor submit to B');
select results_eq(format('select was_running from pgflight.cancel_run(%s)', :a_queued), $$values (true)$$,
                  'but cancels in A');
reset session authorization;
select is((select status from pgflight.runs where id = :b_queued), 'running', 'B''s run is untouched');
select is(pgflight_test.status(:b_gate_step), 'awaiting_approval', 'B''s gate is undecided');

select run_id as a_ready from pgflight.submit_run('A', 'shared', '{}') \gset
set local session authorization pgtap_worker_a;
select pgflight.register_worker('tenant-a') as wa \gset
select results_eq(format('select run_id from pgflight.claim_batch(%s, 100, 30)', :wa),
                  format('values (%s::bigint)', :a_ready), 'the worker of A claims only A''s ready step');
reset session authorization;
select is(pgflight_test.status(:b_queued_step), 'queued', 'B''s step is still queued');

select * from finish();
rollback;
