-- Revert pgflight:views/attempts
begin;
set local role pgflight_owner;
drop view pgflight.attempts;
commit;
