-- Deploy pgflight:internals/_opt_num

begin;

set local role pgflight_owner;

-- Kept for the functions not yet reworked (their options are read after _check_options or are
-- agent-internal): a numeric option or its default; 22023 when not a JSON number or out of the
-- double range.
CREATE OR REPLACE FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select pgflight._opt_number(p_options, p_key, p_default, -1e15, 1e15)
$$;

COMMENT ON FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) IS 'Internal: a numeric option within +/-1e15 or its default; 22023 otherwise.';

REVOKE ALL ON FUNCTION pgflight._opt_num(p_options jsonb, p_key text, p_default double precision) FROM PUBLIC;

commit;
