-- Revert pgflight:internals/_check_limit
begin;
set local role pgflight_owner;
drop function pgflight._check_limit(integer);
commit;
