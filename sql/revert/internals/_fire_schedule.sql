-- Revert pgflight:internals/_fire_schedule
begin;
set local role pgflight_owner;
drop function pgflight._fire_schedule(bigint, text, text, text, jsonb, jsonb, timestamp with time zone);
commit;
