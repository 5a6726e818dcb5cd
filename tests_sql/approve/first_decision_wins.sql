-- approve: a decision made before the step reaches its gate is kept and used there; the same
-- decision again is a no-op (applied = false); a different one is ZF008; a bad decision is
-- 22023 and an unknown step ZF003.
begin;
\ir ../_helpers.psql
select plan(8);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select gate_key, decision, applied from pgflight.approve(%s, %L, %L, null, %L)', :step_id, 'reject', 'bob', 'send'),
                  $$values ('send', 'reject', true)$$, 'an early decision is stored');
select is(pgflight_test.status(:step_id), 'running', 'the running step is not disturbed');
select results_eq(format('select decision, waiting from pgflight.request_approval(%s, %s, %L)', :attempt_id, :token, 'send'),
                  $$values ('reject', false)$$, 'the step reaching the gate gets the early decision and is not parked');
select results_eq(format('select decision, applied from pgflight.approve(%s, %L, %L, null, %L)', :step_id, 'reject', 'carol', 'send'),
                  $$values ('reject', false)$$, 'the same decision again is an idempotent no-op');
select session_user as me \gset
select results_eq(format('select actor, note from pgflight.approvals where step_id = %s and gate_key = %L', :step_id, 'send'),
                  format('values (%L, %L)', :'me', '[on behalf of bob]'),
                  'the first decider stays on record: the login as actor, the name it gave as a note');
select throws_ok(format('select pgflight.approve(%s, %L, %L, null, %L)', :step_id, 'approve', 'dave', 'send'), 'ZF008', null,
                 'a different decision is ZF008');
select throws_ok(format('select pgflight.approve(%s, %L, %L)', :step_id, 'maybe', 'x'), '22023', null, 'an unknown decision is 22023');
select throws_ok($$select pgflight.approve(-1, 'approve', 'x')$$, 'ZF003', null, 'an unknown step is ZF003');

select * from finish();
rollback;
