-- release_step with option retry_after_s gives the attempt back without spending an attempt, but
-- claimable only that many seconds later (a rate limit's Retry-After); a value out of range, or
-- an unknown option, is 22023 and releases nothing.
begin;
\ir ../_helpers.psql
select plan(7);

select run_id, step_id, attempt_id, token from pgflight_test.hold(:w1) \gset
select throws_ok(format('select pgflight.release_step(%s, %s, %L, %L)', :attempt_id, :token, 'x', '{"retry_after_s": -1}'),
                 '22023', null, 'a negative retry_after_s is 22023');
select throws_ok(format('select pgflight.release_step(%s, %s, %L, %L)', :attempt_id, :token, 'x', '{"retry_after": 2}'),
                 '22023', null, 'an unknown option is 22023');
select results_eq(format('select status from pgflight.release_step(%s, %s, %L, %L)', :attempt_id, :token,
                         'rate-limited', '{"retry_after_s": 2}'),
                  $$values ('released')$$, 'release with retry_after_s answers released');
select results_eq(format('select status, attempt_no, failed_attempts from pgflight.step_status where step_id = %s', :step_id),
                  $$values ('queued', 1, 0)$$, 'the same attempt is queued again, no attempt spent');
select is((select available_after from pgflight.step_attempts where id = :attempt_id),
          '2030-01-01 00:00:02+00'::timestamptz, 'claimable retry_after_s seconds from now');
select is((select count(*) from pgflight.claim_batch(:w2, 1, 30)), 0::bigint, 'not claimable before then');

set local pgflight.fake_now = '2030-01-01 00:00:02+00';
select attempt_id as again from pgflight_test.take(:w2) \gset
select is(:again::bigint, :attempt_id::bigint, 'claimable once retry_after_s has passed');

select * from finish();
rollback;
