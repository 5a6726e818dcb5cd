-- Revert pgflight:internals/_unknown_attempt
begin;
set local role pgflight_owner;
drop function pgflight._unknown_attempt(bigint);
commit;
