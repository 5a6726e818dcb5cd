-- Revert pgflight:views/step_status@v0.2.0
begin;
set local role pgflight_owner;
drop view pgflight.step_status;
commit;
