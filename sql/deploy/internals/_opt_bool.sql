-- Deploy pgflight:internals/_opt_bool

begin;

set local role pgflight_owner;

-- The typed readers. Absent or JSON null gives p_default; anything else is checked: its JSON
-- type, and for numbers the bounds, compared as numeric so that 1e300 or 1e400 is refused (never
-- cast to a double that overflows). One rule for integers everywhere: a JSON number with an
-- integral value, so 3 and 3.0 are both 3, and 1.5 is refused (never rounded).
CREATE OR REPLACE FUNCTION pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text DEFAULT 'options'::text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) <> 'boolean' then
    perform pgflight._bad_option(p_scope, p_key, v, 'a JSON boolean (true or false)');
  end if;
  return v::boolean;
end
$$;

COMMENT ON FUNCTION pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text) IS 'Internal: a boolean option or 22023 naming the key.';

REVOKE ALL ON FUNCTION pgflight._opt_bool(p_options jsonb, p_key text, p_default boolean, p_scope text) FROM PUBLIC;

commit;
