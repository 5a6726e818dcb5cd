-- fire_schedules submits one run per (schedule, fire time): a second sweep at the same instant
-- fires nothing; run_sweeps drives it.
begin;
\ir ../_helpers.psql
select plan(4);

select pgflight.schedule_run('test', 'every_minute', '* * * * *', 'tick', '{}', '{"overlap": "allow"}');
set local pgflight.fake_now = '2030-01-01 00:01:00+00';
select is(pgflight.fire_schedules(), 1, 'the due firing is fired');
select is(pgflight.fire_schedules(), 0, 'a second sweep at the same instant fires nothing');
set local pgflight.fake_now = '2030-01-01 00:02:00+00';
select is((select affected from pgflight.run_sweeps() where sweep = 'fire_schedules'), 1, 'run_sweeps fires schedules');
select is((select count(*) from pgflight.runs where submitted_by = 'schedule:every_minute'), 2::bigint, 'two runs');

select * from finish();
rollback;
