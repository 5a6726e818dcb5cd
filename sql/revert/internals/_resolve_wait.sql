-- Revert pgflight:internals/_resolve_wait
begin;
set local role pgflight_owner;
drop function pgflight._resolve_wait(bigint, text, jsonb, text, text);
commit;
