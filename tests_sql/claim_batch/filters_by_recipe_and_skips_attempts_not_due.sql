-- claim_batch takes only the recipes asked for, and never an attempt whose available_after
-- (not_before, retry backoff) is still in the future.
begin;
\ir ../_helpers.psql
select plan(5);

select attempt_id as a_att from pgflight.submit_run('test', 'a', '{}') \gset
select attempt_id as b_att from pgflight.submit_run('test', 'b', '{}') \gset
select attempt_id as later from pgflight.submit_run('test', 'c', '{}', '{"not_before": "2030-01-01T00:10:00Z"}') \gset

select results_eq(format('select attempt_id from pgflight.claim_batch(%s, 10, 30, array[%L])', :w1, 'b'),
                  format('values (%s::bigint)', :b_att), 'only the recipe asked for is claimed');
select results_eq(format('select attempt_id from pgflight.claim_batch(%s, 10, 30, array[%L, %L])', :w1, 'a', 'c'),
                  format('values (%s::bigint)', :a_att), 'an attempt not yet due is skipped');
select is(pgflight_test.status((select step_id from pgflight.step_attempts where id = :later)), 'queued', 'it stays queued');
set local pgflight.fake_now = '2030-01-01 00:10:00+00';
select results_eq(format('select attempt_id from pgflight.claim_batch(%s, 10, 30)', :w1),
                  format('values (%s::bigint)', :later), 'it is claimable once due');
select is((select count(*) from pgflight.claim_batch(:w1, 10, 30, array['zzz'])), 0::bigint, 'an unknown recipe claims nothing');

select * from finish();
rollback;
