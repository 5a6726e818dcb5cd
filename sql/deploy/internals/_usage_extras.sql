-- Deploy pgflight:internals/_usage_extras

begin;

set local role pgflight_owner;

-- The two usage counts beyond the four token totals: usage.cache_creation.ephemeral_1h_input_tokens
-- (one-hour cache writes) and usage.server_tool_use.web_search_requests, each an integer from 0 to
-- 1e10 (22023 naming the key otherwise; absent or null: 0).
CREATE OR REPLACE FUNCTION pgflight._usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  cw_1h := pgflight._opt_int(p_usage -> 'cache_creation', 'ephemeral_1h_input_tokens', 0, 0, 10000000000,
                             'usage.cache_creation');
  searches := pgflight._opt_int(p_usage -> 'server_tool_use', 'web_search_requests', 0, 0, 10000000000,
                                'usage.server_tool_use');
end
$$;

COMMENT ON FUNCTION pgflight._usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint) IS 'Internal: one-hour cache-write tokens and web searches of a usage object (0 when absent); 22023 if malformed.';

REVOKE ALL ON FUNCTION pgflight._usage_extras(p_usage jsonb, OUT cw_1h bigint, OUT searches bigint) FROM PUBLIC;

commit;
