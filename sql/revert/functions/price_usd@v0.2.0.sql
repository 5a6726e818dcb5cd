-- Revert pgflight:functions/price_usd@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight.price_usd(text, jsonb);
commit;
