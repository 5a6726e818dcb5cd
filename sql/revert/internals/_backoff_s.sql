-- Revert pgflight:internals/_backoff_s
begin;
set local role pgflight_owner;
drop function pgflight._backoff_s(integer, jsonb);
commit;
