-- Deploy pgflight:internals/_check_arg

begin;

set local role pgflight_owner;

-- A scalar argument with bounds (lease_s, batch_size …): 22023 naming it when NULL, NaN, infinite
-- or outside [min, max].
CREATE OR REPLACE FUNCTION pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value is null or p_value = 'NaN'::double precision or p_value < p_min or p_value > p_max then
    raise exception using
      errcode = '22023',
      message = format('%s must be a number from %s to %s', p_name, p_min, p_max),
      detail  = format('got %s', coalesce(p_value::text, 'NULL')),
      hint    = format('Pass a finite %s within [%s, %s].', p_name, p_min, p_max);
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision) IS 'Internal: 22023 unless the argument is a number within [min, max].';

REVOKE ALL ON FUNCTION pgflight._check_arg(p_name text, p_value double precision, p_min double precision, p_max double precision) FROM PUBLIC;

commit;
