-- Revert pgflight:views/engine_health@v0.3.0
begin;
set local role pgflight_owner;
drop view pgflight.engine_health;
commit;
