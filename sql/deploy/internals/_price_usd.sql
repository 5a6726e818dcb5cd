-- Deploy pgflight:internals/_price_usd

begin;

set local role pgflight_owner;

-- USD of one model call: usage (Messages API field names: input_tokens, output_tokens,
-- cache_creation_input_tokens, cache_read_input_tokens, cache_creation.ephemeral_1h_input_tokens,
-- server_tool_use.web_search_requests) priced by the longest model_prices.model that prefixes
-- p_model (_price_of). 22023 when no price matches or a count is malformed.
CREATE OR REPLACE FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) RETURNS numeric
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_p pgflight.model_prices;
  v_x record;
begin
  select p.* into v_p from pgflight.model_prices p
   where left(p_model, length(p.model)) = p.model
   order by length(p.model) desc limit 1;
  if not found then
    raise exception using
      errcode = '22023',
      message = format('no price for model %L', p_model),
      hint    = 'Add the model (or a prefix of its name) to pgflight.model_prices.';
  end if;
  v_x := pgflight._usage_extras(p_usage);
  return pgflight._price_of(v_p,
                            pgflight._opt_int(p_usage, 'input_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'output_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'cache_creation_input_tokens', 0, 0, 10000000000, 'usage'),
                            pgflight._opt_int(p_usage, 'cache_read_input_tokens', 0, 0, 10000000000, 'usage'),
                            v_x.cw_1h, v_x.searches);
end
$$;

COMMENT ON FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) IS 'Internal: USD of a call from its usage and pgflight.model_prices (longest prefix). 22023 unknown model.';

REVOKE ALL ON FUNCTION pgflight._price_usd(p_model text, p_usage jsonb) FROM PUBLIC;

commit;
