-- Deploy pgflight:internals/_require_positive

begin;

set local role pgflight_owner;

-- Raise 22023 for a missing, non-positive or non-finite argument.
CREATE OR REPLACE FUNCTION pgflight._require_positive(p_name text, p_value double precision) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value is null or p_value <= 0 or p_value = 'NaN'::double precision or p_value = 'Infinity'::double precision then
    raise exception using
      errcode = '22023',
      message = format('%s must be a positive number', p_name),
      detail  = format('got %s', coalesce(p_value::text, 'NULL')),
      hint    = format('Pass a finite %s greater than zero.', p_name);
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_positive(p_name text, p_value double precision) IS 'Internal: 22023 unless the value is a finite number above zero.';

REVOKE ALL ON FUNCTION pgflight._require_positive(p_name text, p_value double precision) FROM PUBLIC;

commit;
