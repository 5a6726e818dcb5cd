-- Deploy pgflight:internals/_price_of

begin;

set local role pgflight_owner;

-- USD of one model call from its counts and a model_prices row: input, output, five-minute cache
-- writes, one-hour cache writes, cache reads (tokens, priced per million) and server-side web
-- searches (priced per search). p_cw is cache_creation_input_tokens, which counts the one-hour
-- writes p_cw_1h too: the five-minute writes are the rest. One-hour writes are priced at
-- cache_write_1h_usd_per_mtok, or twice the input price when the row has none (Anthropic's rule:
-- https://platform.claude.com/docs/en/about-claude/pricing, "Model pricing": a one-hour cache
-- write costs 2x the base input price, a five-minute one 1.25x; "Web search tool": USD 10 per
-- 1,000 searches). Called by _price_usd and record_model_call, so both price alike.
CREATE OR REPLACE FUNCTION pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint) RETURNS numeric
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select (p_in * p_price.input_usd_per_mtok + p_out * p_price.output_usd_per_mtok
          + (greatest(p_cw, p_cw_1h) - p_cw_1h) * p_price.cache_write_usd_per_mtok
          + p_cw_1h * coalesce(p_price.cache_write_1h_usd_per_mtok, 2 * p_price.input_usd_per_mtok)
          + p_cr * p_price.cache_read_usd_per_mtok) / 1000000
         + p_searches * p_price.web_search_usd_per_request
$$;

COMMENT ON FUNCTION pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint) IS 'Internal: USD of a call from its token counts (5-minute and 1-hour cache writes apart) and web searches.';

REVOKE ALL ON FUNCTION pgflight._price_of(p_price pgflight.model_prices, p_in bigint, p_out bigint, p_cw bigint, p_cr bigint, p_cw_1h bigint, p_searches bigint) FROM PUBLIC;

commit;
