-- Revert pgflight:internals/_vacuum_horizon
begin;
set local role pgflight_owner;
drop function pgflight._vacuum_horizon();
commit;
