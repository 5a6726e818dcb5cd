-- Revert pgflight:functions/record_effect
begin;
set local role pgflight_owner;
drop function pgflight.record_effect(bigint, bigint, text, jsonb);
commit;
