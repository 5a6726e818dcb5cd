-- Revert pgflight:tables/engine_locks
begin;
set local role pgflight_owner;
drop table pgflight.engine_locks;
commit;
