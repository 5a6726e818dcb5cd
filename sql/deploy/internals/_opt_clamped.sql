-- Deploy pgflight:internals/_opt_clamped

begin;

set local role pgflight_owner;

-- For reading stored options in a sweep or a claim: never raises. A JSON number is clamped into
-- [min, max]; anything else (a string "5" stored before options were checked) gives the default.
CREATE OR REPLACE FUNCTION pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when jsonb_typeof(p_options) = 'object' and jsonb_typeof(p_options -> p_key) = 'number'
              then least(greatest((p_options -> p_key)::numeric, p_min), p_max)::double precision
              else p_default end
$$;

COMMENT ON FUNCTION pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric) IS 'Internal: a stored number option clamped into [min, max], the default when it is not a number; never raises.';

REVOKE ALL ON FUNCTION pgflight._opt_clamped(p_options jsonb, p_key text, p_default double precision, p_min numeric, p_max numeric) FROM PUBLIC;

commit;
