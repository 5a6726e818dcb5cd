-- Revert pgflight:tables/step_attempts
begin;
set local role pgflight_owner;
drop table pgflight.step_attempts;
commit;
