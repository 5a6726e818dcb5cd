-- Revert pgflight:functions/price_usd
begin;
set local role pgflight_owner;
drop function pgflight.price_usd(text, jsonb);
commit;
