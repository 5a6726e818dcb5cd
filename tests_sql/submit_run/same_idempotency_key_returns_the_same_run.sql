-- submit_run idempotency: the same key and input returns the same run (created = false); the
-- same key with another input or recipe is ZF004; keys are scoped to a workspace.
begin;
\ir ../_helpers.psql
select plan(6);

select run_id, step_id, attempt_id from pgflight.submit_run('test', 'r', '{"a": 1}', '{"idempotency_key": "k1"}') \gset
select results_eq($$select run_id, step_id, attempt_id, created from pgflight.submit_run('test', 'r', '{"a": 1}', '{"idempotency_key": "k1"}')$$,
                  format('values (%s::bigint, %s::bigint, %s::bigint, false)', :run_id, :step_id, :attempt_id),
                  'a repeated submit returns the same run, step and attempt with created = false');
select is((select count(*) from pgflight.runs where idempotency_key = 'k1'), 1::bigint, 'only one run exists for the key');
select throws_ok($$select pgflight.submit_run('test', 'r', '{"a": 2}', '{"idempotency_key": "k1"}')$$, 'ZF004', null,
                 'the same key with a different input is ZF004');
select throws_ok($$select pgflight.submit_run('test', 'other', '{"a": 1}', '{"idempotency_key": "k1"}')$$, 'ZF004', null,
                 'the same key with a different recipe is ZF004');
select pgflight.create_workspace('other') as other_ws \gset
select isnt((select run_id from pgflight.submit_run('other', 'r', '{"a": 1}', '{"idempotency_key": "k1"}')), :run_id::bigint,
            'the same key in another workspace is another run');
select isnt((select run_id from pgflight.submit_run('test', 'r', '{"a": 1}')), :run_id::bigint,
            'without a key every submit is a new run');

select * from finish();
rollback;
