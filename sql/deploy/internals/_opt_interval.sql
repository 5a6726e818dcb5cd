-- Deploy pgflight:internals/_opt_interval

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text DEFAULT 'options'::text) RETURNS interval
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select make_interval(secs => pgflight._opt_number(p_options, p_key, p_default_s, p_min_s, p_max_s, p_scope))
$$;

COMMENT ON FUNCTION pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text) IS 'Internal: a seconds option within [min, max] as an interval, or 22023.';

REVOKE ALL ON FUNCTION pgflight._opt_interval(p_options jsonb, p_key text, p_default_s double precision, p_min_s numeric, p_max_s numeric, p_scope text) FROM PUBLIC;

commit;
