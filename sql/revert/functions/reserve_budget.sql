-- Revert pgflight:functions/reserve_budget
begin;
drop function pgflight.price_usd(text, jsonb);
drop function pgflight.reserve_budget(bigint, bigint, bigint, integer, numeric);
commit;
