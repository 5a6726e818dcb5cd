-- Revert pgflight:views/step_status
begin;
set local role pgflight_owner;
drop view pgflight.step_status;
commit;
