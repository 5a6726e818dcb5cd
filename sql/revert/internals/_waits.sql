-- Revert pgflight:internals/_waits
begin;
set local role pgflight_owner;
drop function pgflight._lock_event_channel(bigint, text, text);
drop function pgflight._park_on_wait(pgflight.step_attempts, pgflight.waits);
drop function pgflight._resolve_wait(bigint, text, jsonb, text, text);
commit;
