-- Revert pgflight:views/run_events
begin;
set local role pgflight_owner;
drop view pgflight.run_events;
commit;
