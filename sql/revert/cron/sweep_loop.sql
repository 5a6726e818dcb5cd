-- Revert pgflight:cron/sweep_loop
begin;
set local role pgflight_owner;
drop procedure pgflight.sweep_loop(double precision, double precision);
commit;
