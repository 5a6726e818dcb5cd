-- Revert pgflight:internals/_cascade_root
begin;
set local role pgflight_owner;
drop function pgflight._cascade_root(bigint);
commit;
