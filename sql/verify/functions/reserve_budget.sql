-- Verify pgflight:functions/reserve_budget
select 'pgflight.reserve_budget(bigint, bigint, bigint, integer, numeric)'::regprocedure;
select 'pgflight.price_usd(text, jsonb)'::regprocedure;
