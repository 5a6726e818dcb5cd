-- Revert pgflight:internals/_health
begin;
set local role pgflight_owner;
drop function pgflight._vacuum_horizon();
commit;
