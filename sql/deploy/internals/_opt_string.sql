-- Deploy pgflight:internals/_opt_string

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text DEFAULT 'options'::text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v jsonb := p_options -> p_key;
begin
  if v is null or jsonb_typeof(v) = 'null' then
    return p_default;
  elsif jsonb_typeof(v) <> 'string' or length(v #>> '{}') not between p_min_len and p_max_len then
    perform pgflight._bad_option(p_scope, p_key, v,
                                 format('a JSON string of %s to %s characters', p_min_len, p_max_len));
  end if;
  return v #>> '{}';
end
$$;

COMMENT ON FUNCTION pgflight._opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text) IS 'Internal: a string option of bounded length or 22023 naming the key.';

REVOKE ALL ON FUNCTION pgflight._opt_string(p_options jsonb, p_key text, p_default text, p_min_len integer, p_max_len integer, p_scope text) FROM PUBLIC;

commit;
