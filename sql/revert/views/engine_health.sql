-- Revert pgflight:views/engine_health
begin;
set local role pgflight_owner;
drop view pgflight.engine_health;
commit;
