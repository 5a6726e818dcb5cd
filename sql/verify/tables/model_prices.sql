-- Verify pgflight:tables/model_prices
select model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source
  from pgflight.model_prices where false;
