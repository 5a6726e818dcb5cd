-- Revert pgflight:functions/record_effect@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.record_effect(bigint, bigint, text, jsonb);
commit;
