-- Deploy pgflight:functions/price_usd

begin;

set local role pgflight_owner;

-- The USD a call of p_model with this usage costs (Messages API usage field names), from
-- model_prices (longest matching prefix): what the worker uses to estimate a reservation and
-- the CLI to show prices. Errors: 22023 no price for the model.
CREATE OR REPLACE FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) RETURNS numeric
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._price_usd(p_model, p_usage) $$;

COMMENT ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) IS 'USD of a call of p_model with usage p_usage, from model_prices. Errors: 22023 unknown model.';

REVOKE ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.price_usd(p_model text, p_usage jsonb) TO pgflight_reader;

commit;
