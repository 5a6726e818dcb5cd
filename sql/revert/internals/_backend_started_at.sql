-- Revert pgflight:internals/_backend_started_at
begin;
set local role pgflight_owner;
drop function pgflight._backend_started_at(integer);
commit;
