-- Revert pgflight:tables/model_prices
begin;
set local role pgflight_owner;
drop table pgflight.model_prices;
commit;
