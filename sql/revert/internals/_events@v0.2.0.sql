-- Revert pgflight:internals/_events@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight._notify_ready();
drop function pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb);
commit;
