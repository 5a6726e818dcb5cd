-- Deploy pgflight:internals/_opt_int

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text DEFAULT 'options'::text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
  n numeric;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) = 'number' then
    n := v::numeric;
    if n = trunc(n) and n >= p_min and n <= p_max then
      return n::bigint;
    end if;
  end if;
  perform pgflight._bad_option(p_scope, p_key, v, format('an integer from %s to %s', p_min, p_max));
  return null;
end
$$;

COMMENT ON FUNCTION pgflight._opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text) IS 'Internal: an integer option (3 or 3.0) within [min, max] or 22023 naming the key, the value and the bounds.';

REVOKE ALL ON FUNCTION pgflight._opt_int(p_options jsonb, p_key text, p_default bigint, p_min numeric, p_max numeric, p_scope text) FROM PUBLIC;

commit;
