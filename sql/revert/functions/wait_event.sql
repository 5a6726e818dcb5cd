-- Revert pgflight:functions/wait_event
begin;
set local role pgflight_owner;
drop function pgflight.wait_event(bigint, bigint, text, text, text, jsonb);
commit;
