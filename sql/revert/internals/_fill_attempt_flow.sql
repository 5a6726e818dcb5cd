-- Revert pgflight:internals/_fill_attempt_flow
begin;
set local role pgflight_owner;
drop function pgflight._fill_attempt_flow();
commit;
