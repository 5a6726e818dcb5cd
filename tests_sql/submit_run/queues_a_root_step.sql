-- submit_run: one run, one root step, one queued attempt (attempt_no 1), and a 'queued' event.
begin;
\ir ../_helpers.psql
select plan(8);

select run_id, step_id, attempt_id, created from pgflight.submit_run('test', 'r', '{"doc": 1}', '{"priority": 5}') \gset
select ok(:'created'::boolean, 'created is true for a new run');
select is((select status from pgflight.runs where id = :run_id), 'running', 'the run is running');
select is((select root_step_id from pgflight.runs where id = :run_id), :step_id::bigint, 'the run points at its root step');
select is(pgflight_test.status(:step_id), 'queued', 'the root step is queued');
select results_eq(format('select attempt_no, priority, available_after from pgflight.step_attempts where id = %s', :attempt_id),
                  $$values (1, 5, '2030-01-01 00:00:00+00'::timestamptz)$$,
                  'attempt 1 carries the priority and is due now');
select is((select input from pgflight.steps where id = :step_id), '{"doc": 1}'::jsonb, 'the input is stored once on the step');
select is(pgflight_test.events(:run_id, :step_id, 'queued'), 1::bigint, 'a queued event is logged');
select throws_ok($$select pgflight.submit_run('nope', 'r', '{}')$$, 'ZF003', null, 'an unknown workspace is ZF003');

select * from finish();
rollback;
