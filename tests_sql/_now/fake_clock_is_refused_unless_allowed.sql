-- With settings.allow_fake_clock off, a session that sets pgflight.fake_now gets ZF009 from
-- _now() (and so from every API call), instead of a clock it could use to steal leases.
begin;
\ir ../_helpers.psql
select plan(4);

select is(pgflight._now(), '2030-01-01 00:00:00+00'::timestamptz, 'with the fake clock allowed, _now() is the fake instant');
update pgflight.settings set allow_fake_clock = false;
select throws_ok('select pgflight._now()', 'ZF009', null, 'with it disallowed, _now() raises ZF009');
select throws_ok(format('select pgflight.claim_batch(%s, 1, 30)', :w1), 'ZF009', null, 'and so does every API call');
reset pgflight.fake_now;
select ok(abs(extract(epoch from pgflight._now() - clock_timestamp())) < 5, 'without fake_now, _now() is the real clock');

select * from finish();
rollback;
