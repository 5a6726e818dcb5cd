-- Revert pgflight:internals/_event
begin;
set local role pgflight_owner;
drop function pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb);
commit;
