-- record_stale_write logs a refused write (true) and does nothing for a token that is still
-- current or an unknown attempt (false). The event never shows the current token: it is a
-- capability.
begin;
\ir ../_helpers.psql
select plan(5);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select ok(not pgflight.record_stale_write(:attempt_id, :token, 'complete'), 'a current token is not stale: false');
select ok(pgflight.record_stale_write(:attempt_id, :token - 1, 'fail'), 'an old token is logged: true');
select results_eq(format('select detail from pgflight.run_events where step_id = %s and reason = %L', :step_id, 'stale_result_rejected'),
                  format('values (%L::jsonb)', jsonb_build_object('operation', 'fail', 'caller_token', :token - 1)),
                  'the event names the operation and the caller''s token, never the current one');
select ok(not pgflight.record_stale_write(-1, 1, 'complete'), 'an unknown attempt: false');
select is(pgflight_test.status(:step_id), 'running', 'logging changes no state');

select * from finish();
rollback;
