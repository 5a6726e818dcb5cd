-- Deploy pgflight:internals/_opt_text

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._opt_string(p_options, p_key, p_default, 0, 16777216)
$$;

COMMENT ON FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) IS 'Internal: a string option or its default; 22023 when the value is not a JSON string.';

REVOKE ALL ON FUNCTION pgflight._opt_text(p_options jsonb, p_key text, p_default text) FROM PUBLIC;

commit;
