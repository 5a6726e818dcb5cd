-- Deploy pgflight:internals/_limit_option

begin;

set local role pgflight_owner;

-- A numeric limit from options: JSON null gives null (no limit); otherwise a finite number in
-- [p_min, p_max], whole when p_integer. 22023 naming the key otherwise.
CREATE OR REPLACE FUNCTION pgflight._limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean) RETURNS double precision
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_value double precision;
begin
  if jsonb_typeof(p_options -> p_key) is null or jsonb_typeof(p_options -> p_key) = 'null' then
    return null;
  end if;
  if jsonb_typeof(p_options -> p_key) <> 'number' then
    raise exception using errcode = '22023', message = format('option %s must be a number', p_key),
      detail = format('got %s', p_options -> p_key), hint = 'Pass a JSON number, or null to remove the limit.';
  end if;
  v_value := (p_options ->> p_key)::double precision;
  if v_value < p_min or v_value > p_max or (p_integer and v_value <> trunc(v_value)) then
    raise exception using errcode = '22023',
      message = format('option %s is out of range', p_key),
      detail = format('got %s; allowed: %s %s to %s', p_options -> p_key,
                      case when p_integer then 'whole numbers' else 'numbers' end, p_min, p_max),
      hint = 'Pass a value in range, or null to remove the limit.';
  end if;
  return v_value;
end
$$;

COMMENT ON FUNCTION pgflight._limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean) IS 'Internal: a numeric limit option in range, or null; 22023 naming the key otherwise.';

REVOKE ALL ON FUNCTION pgflight._limit_option(p_options jsonb, p_key text, p_min double precision, p_max double precision, p_integer boolean) FROM PUBLIC;

commit;
