-- Verify pgflight:tables/model_prices_openai
select 1 / count(*) from pgflight.model_prices where model = 'gpt-4.1-mini';
