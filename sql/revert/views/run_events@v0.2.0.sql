-- Revert pgflight:views/run_events@v0.2.0
begin;
set local role pgflight_owner;
drop view pgflight.run_events;
commit;
