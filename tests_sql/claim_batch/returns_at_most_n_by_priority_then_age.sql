-- claim_batch leases at most n due attempts, highest priority first, then oldest; each gets a
-- fresh, strictly increasing fencing token, and a second claimer never gets the same attempt
-- (invariant 1).
begin;
\ir ../_helpers.psql
select plan(8);

select attempt_id as old_low from pgflight.submit_run('test', 'r', '{"n": 1}') \gset
set local pgflight.fake_now = '2030-01-01 00:00:01+00';
select attempt_id as new_high from pgflight.submit_run('test', 'r', '{"n": 2}', '{"priority": 10}') \gset
select attempt_id as old_high from pgflight.submit_run('test', 'r', '{"n": 3}', '{"priority": 10}') \gset
select attempt_id as new_low from pgflight.submit_run('test', 'r', '{"n": 4}') \gset
update pgflight.step_attempts set available_after = '2030-01-01 00:00:00.5+00' where id = :old_high;
set local pgflight.fake_now = '2030-01-01 00:00:02+00';

create temp table first_claim on commit drop as select * from pgflight.claim_batch(:w1, 3, 30);
select is((select count(*) from first_claim), 3::bigint, 'claim_batch(3) with four ready returns three');
select bag_eq('select attempt_id from first_claim',
              format('values (%s::bigint), (%s), (%s)', :old_high, :new_high, :old_low),
              'the two high-priority attempts, then the oldest low-priority one');
select is((select count(distinct fencing_token) from first_claim), 3::bigint, 'each claimed attempt has its own token');
select ok((select bool_and(lease_expires_at = '2030-01-01 00:00:32+00') from first_claim), 'each lease is now + lease_s');

create temp table second_claim on commit drop as select * from pgflight.claim_batch(:w2, 10, 30);
select results_eq('select attempt_id from second_claim', format('values (%s::bigint)', :new_low),
                  'a second worker gets only what is left');
select ok((select min(fencing_token) from second_claim) > (select max(fencing_token) from first_claim),
          'tokens strictly increase across claims');
select is((select count(*) from pgflight.claim_batch(:w2, 10, 30)), 0::bigint, 'nothing is claimed twice');
select is((select count(*) from pgflight.run_events where reason = 'claimed'
            and attempt_id in (:old_low, :new_high, :old_high, :new_low)), 4::bigint, 'each claim is logged once');

select * from finish();
rollback;
