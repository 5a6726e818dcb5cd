-- claim_batch argument checks: batch size and lease must be positive (22023), the worker must be
-- registered and not stopped (ZF010).
begin;
\ir ../_helpers.psql
select plan(8);

select throws_ok(format('select pgflight.claim_batch(%s, 0, 30)', :w1), '22023', null, 'batch size 0 is refused');
select throws_ok(format('select pgflight.claim_batch(%s, -1, 30)', :w1), '22023', null, 'a negative batch size is refused');
select throws_ok(format('select pgflight.claim_batch(%s, null, 30)', :w1), '22023', null, 'a NULL batch size is refused');
select throws_ok(format('select pgflight.claim_batch(%s, 1, 0)', :w1), '22023', null, 'lease 0 is refused');
select throws_ok(format('select pgflight.claim_batch(%s, 1, -5)', :w1), '22023', null, 'a negative lease is refused');
select throws_ok(format('select pgflight.claim_batch(%s, 1, null)', :w1), '22023', null, 'a NULL lease is refused');
select throws_ok('select pgflight.claim_batch(-1, 1, 30)', 'ZF010', null, 'an unknown worker is ZF010');
select throws_ok('select pgflight.claim_batch(null, 1, 30)', 'ZF010', null, 'a NULL worker is ZF010');

select * from finish();
rollback;
