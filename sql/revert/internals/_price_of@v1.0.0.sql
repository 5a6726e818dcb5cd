-- Revert pgflight:internals/_price_of@v1.0.0
begin;
set local role pgflight_owner;
drop function pgflight._price_of(pgflight.model_prices, bigint, bigint, bigint, bigint, bigint, bigint);
commit;
