-- Revert pgflight:functions/effects
begin;
drop function pgflight.find_effect(bigint, text);
drop function pgflight.record_effect(bigint, bigint, text, jsonb);
commit;
