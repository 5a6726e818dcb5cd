-- The engine clock follows pgflight.fake_now when the fake clock is allowed (the test template
-- allows it), and is the real clock again once the setting is reset.
begin;
select plan(2);

set local pgflight.fake_now = '2030-01-01 00:00:00+00';
select is(pgflight._now(), '2030-01-01 00:00:00+00'::timestamptz,
          '_now() returns the fake instant while pgflight.fake_now is set');

reset pgflight.fake_now;
select ok(abs(extract(epoch from pgflight._now() - clock_timestamp())) < 5,
          '_now() is the real clock again after RESET');

select * from finish();
rollback;
