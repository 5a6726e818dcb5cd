-- Deploy pgflight:internals/_opt_number

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text DEFAULT 'options'::text) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
  n numeric;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) <> 'number' then
    perform pgflight._bad_option(p_scope, p_key, v, format('a JSON number from %s to %s', p_min, p_max));
  end if;
  n := v::numeric;
  if n < p_min or n > p_max then
    perform pgflight._bad_option(p_scope, p_key, v, format('a JSON number from %s to %s', p_min, p_max));
  end if;
  return n::double precision;
end
$$;

COMMENT ON FUNCTION pgflight._opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text) IS 'Internal: a number option within [min, max] or 22023 naming the key, the value and the bounds.';

REVOKE ALL ON FUNCTION pgflight._opt_number(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric, p_scope text) FROM PUBLIC;

commit;
