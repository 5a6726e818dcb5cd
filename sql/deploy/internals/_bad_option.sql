-- Deploy pgflight:internals/_bad_option

begin;

set local role pgflight_owner;

-- Raise 22023 for option p_key of p_scope: the message names the key, DETAIL the value and the
-- bounds, HINT the documented range.
CREATE OR REPLACE FUNCTION pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = '22023',
    message = format('option %s of %s must be %s', p_key, p_scope, p_expected),
    detail  = format('got %s', left(coalesce(p_value::text, 'NULL'), 200)),
    hint    = format('See docs/options.md: %s.%s is %s.', p_scope, p_key, p_expected);
end
$$;

COMMENT ON FUNCTION pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text) IS 'Internal: raise 22023 naming the option, its value (DETAIL) and its documented range (HINT).';

REVOKE ALL ON FUNCTION pgflight._bad_option(p_scope text, p_key text, p_value jsonb, p_expected text) FROM PUBLIC;

commit;
