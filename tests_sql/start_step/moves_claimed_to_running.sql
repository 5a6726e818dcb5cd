-- start_step: claimed -> running for the holder, idempotent for the same token; a superseded
-- token is ZF001, a cancelled attempt ZF002, an unknown attempt ZF003.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1, 'r', '{}', 30, false) \gset
select results_eq(format('select started_at from pgflight.start_step(%s, %s)', :attempt_id, :token),
                  $$values ('2030-01-01 00:00:00+00'::timestamptz)$$, 'start returns started_at');
select is(pgflight_test.status(:step_id), 'running', 'the attempt is running');
set local pgflight.fake_now = '2030-01-01 00:00:05+00';
select results_eq(format('select started_at from pgflight.start_step(%s, %s)', :attempt_id, :token),
                  $$values ('2030-01-01 00:00:00+00'::timestamptz)$$, 'a second start returns the same started_at');
select is(pgflight_test.events(:run_id, :step_id, 'started'), 1::bigint, 'started is logged once');
select throws_ok(format('select pgflight.start_step(%s, %s)', :attempt_id, :token::bigint - 1), 'ZF001', null, 'a wrong token is ZF001');
select throws_ok('select pgflight.start_step(-1, 1)', 'ZF003', null, 'an unknown attempt is ZF003');
select pgflight.cancel_run(:run_id) \gset
select throws_ok(format('select pgflight.start_step(%s, %s)', :attempt_id, :token), 'ZF002', null, 'a cancelled attempt is ZF002');

select * from finish();
rollback;
