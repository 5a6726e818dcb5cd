-- Revert pgflight:internals/_require_own_attempt
begin;
set local role pgflight_owner;
drop function pgflight._require_own_attempt(bigint, bigint, text);
commit;
