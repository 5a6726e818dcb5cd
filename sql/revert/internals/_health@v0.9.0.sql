-- Revert pgflight:internals/_health@v0.9.0
begin;
set local role pgflight_owner;
drop function pgflight._vacuum_horizon();
commit;
