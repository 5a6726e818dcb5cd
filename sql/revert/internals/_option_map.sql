-- Revert pgflight:internals/_option_map
begin;
set local role pgflight_owner;
drop function pgflight._option_map();
commit;
