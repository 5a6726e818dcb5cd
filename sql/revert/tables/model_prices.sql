-- Revert pgflight:tables/model_prices
begin;
drop table pgflight.model_prices;
commit;
