-- claim_batch reclaims expired leases itself before claiming, so a dead worker's step runs again
-- within the lease even when no cron sweep runs (invariant 4). The new attempt is attempt_no 2
-- under a new token; the old token is refused (invariant 2).
begin;
\ir ../_helpers.psql
select plan(7);

update pgflight.settings set reclaim_in_claim = 16;
select run_id, step_id, attempt_id as a1, token as t1 from pgflight_test.hold(:w1, 'r', '{"backoff": {"base_s": 0, "jitter": 0}}', 5) \gset

set local pgflight.fake_now = '2030-01-01 00:00:04+00';
select is((select count(*) from pgflight.claim_batch(:w2, 1, 30)), 0::bigint, 'a live lease is not taken');

set local pgflight.fake_now = '2030-01-01 00:00:06+00';
create temp table c on commit drop as select * from pgflight.claim_batch(:w2, 1, 30);
select results_eq('select step_id, attempt_no from c', format('values (%s::bigint, 2)', :step_id),
                  'after expiry the same step is claimed again as attempt 2');
select isnt((select attempt_id from c), :a1::bigint, 'on a new attempt');
select results_eq(format('select status, reason from pgflight.step_attempts where id = %s', :a1),
                  $$values ('lease_expired', 'lease_expired')$$, 'the old attempt ended lease_expired');
select is((select failed_attempts from pgflight.steps where id = :step_id), 1, 'the expiry counts as a failed attempt');
select throws_ok(format('select pgflight.complete_step(%s, %s, %L)', :a1, :t1, '{}'), 'ZF001', null,
                 'the old holder''s completion is refused');
select is(pgflight_test.status(:step_id), 'claimed', 'and changes nothing');

select * from finish();
rollback;
