-- install_schedules in a database without pg_cron raises ZF011 (with a hint to call run_sweeps
-- from another scheduler); uninstall_schedules there removes nothing.
begin;
\ir ../_helpers.psql
select plan(2);

select throws_ok('select * from pgflight.install_schedules()', 'ZF011', null, 'pg_cron missing is ZF011');
select is(pgflight.uninstall_schedules(), 0, 'uninstall without pg_cron removes nothing');

select * from finish();
rollback;
