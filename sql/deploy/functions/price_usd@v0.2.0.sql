-- Deploy pgflight:functions/price_usd
begin;
set local role pgflight_owner;

-- The USD a call of p_model with this usage costs (Messages API usage field names), from
-- model_prices (longest matching prefix): what the worker uses to estimate a reservation and
-- the CLI to show prices. Errors: 22023 no price for the model.
create or replace function pgflight.price_usd(p_model text, p_usage jsonb)
returns numeric
language sql stable security definer
set search_path = ''
as $$ select pgflight._price_usd(p_model, p_usage) $$;
comment on function pgflight.price_usd(text, jsonb) is
  'USD of a call of p_model with usage p_usage, from model_prices. Errors: 22023 unknown model.';
grant execute on function pgflight.price_usd(text, jsonb) to pgflight_worker, pgflight_operator, pgflight_reader;

commit;
