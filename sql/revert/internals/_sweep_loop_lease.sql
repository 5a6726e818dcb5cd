-- Revert pgflight:internals/_sweep_loop_lease
begin;
set local role pgflight_owner;
drop function pgflight._sweep_loop_lease(boolean);
commit;
