-- schedule_run checks the expression, zone and run options when the schedule is written, and
-- computes the next firing on the schedule's wall clock.
begin;
\ir ../_helpers.psql
select plan(5);

select throws_ok($$select pgflight.schedule_run('test', 's', '61 * * * *', 'r')$$, '22023');
select throws_ok($$select pgflight.schedule_run('test', 's', '0 0 30 2 *', 'r')$$, '22023');
select throws_ok($$select pgflight.schedule_run('test', 's', '* * * * *', 'r', '{}', '{"time_zone": "Nowhere/Land"}')$$, '22023');
select throws_ok($$select pgflight.schedule_run('test', 's', '* * * * *', 'r', '{}', '{"run_options": {"priority": "x"}}')$$, '22023');
select is((select next_fire_at from pgflight.schedule_run('test', 's', '0 30 9 * * MON-FRI', 'r', '{}',
                                                          '{"time_zone": "Europe/Paris"}')),
          '2030-01-01 08:30:00+00'::timestamptz, 'Tuesday 1 January 2030, 09:30 in Paris');

select * from finish();
rollback;
