-- Revert pgflight:views/attempts@v0.2.0
begin;
set local role pgflight_owner;
drop view pgflight.attempts;
commit;
