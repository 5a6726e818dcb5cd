-- expire_approvals applies a gate's default decision once it is past expires_at and requeues the
-- parked step; a gate not yet expired is left alone.
begin;
\ir ../_helpers.psql
select plan(6);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select pgflight.request_approval(:attempt_id, :token, 'gate', null, '{"expires_in_s": 60, "default_decision": "approve"}') \gset
select throws_ok(format('select pgflight.request_approval(%s, %s, %L, null, %L)', :attempt_id, :token, 'g2', '{"default_decision": "maybe"}'),
                 '22023', null, 'an unknown default decision is 22023');
set local pgflight.fake_now = '2030-01-01 00:00:59+00';
select is(pgflight.expire_approvals(), 0, 'nothing expires before expires_at');
set local pgflight.fake_now = '2030-01-01 00:01:01+00';
select is(pgflight.expire_approvals(), 1, 'the gate expires after expires_at');
select results_eq(format('select decision, actor from pgflight.approvals where step_id = %s', :step_id),
                  $$values ('approve', 'expire_approvals')$$, 'with its default decision');
select is(pgflight_test.status(:step_id), 'queued', 'the step is requeued');
select is(pgflight.expire_approvals(), 0, 'a decided gate does not expire again');

select * from finish();
rollback;
