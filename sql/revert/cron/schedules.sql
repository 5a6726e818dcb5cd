begin;
select pgflight.uninstall_schedules();
drop function pgflight.uninstall_schedules();
drop function pgflight.install_schedules(integer);
drop procedure pgflight.sweep_loop(double precision, double precision);
commit;
