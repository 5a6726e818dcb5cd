-- request_approval parks the attempt in awaiting_approval (no lease) until a decision; approve
-- requeues it, and the step, run again, asking at the same gate gets the decision at once.
begin;
\ir ../_helpers.psql
select plan(8);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select results_eq(format('select decision, waiting from pgflight.request_approval(%s, %s, %L, %L)', :attempt_id, :token, 'send', '{"to": "x"}'),
                  $$values (null::text, true)$$, 'no decision yet: waiting');
select is(pgflight_test.status(:step_id), 'awaiting_approval', 'the attempt is parked at the gate');
select is(pgflight_test.events(:run_id, :step_id, 'approval_requested'), 1::bigint, 'approval_requested is logged');
select is((select count(*) from pgflight.claim_batch(:w2, 10, 30)), 0::bigint, 'a parked step is not claimable');
select results_eq(format('select applied from pgflight.approve(%s, %L, %L, %L)', :step_id, 'approve', 'alice', 'fine'),
                  $$values (true)$$, 'approve applies the decision');
select is(pgflight_test.status(:step_id), 'queued', 'the step is requeued');
select attempt_id as a2, token as t2 from pgflight_test.take(:w2) \gset
select results_eq(format('select decision, actor, note, waiting from pgflight.request_approval(%s, %s, %L)', :a2, :t2, 'send'),
                  format('values (%L, %L, %L, false)', 'approve', session_user, 'fine [on behalf of alice]'),
                  'asking again returns the decision at once (actor: the login; the name given, in the note)');
select throws_ok(format('select pgflight.request_approval(%s, %s, %L)', :a2, :t2, ' '), '22023', null, 'a blank gate key is 22023');

select * from finish();
rollback;
