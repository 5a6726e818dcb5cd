-- Deploy pgflight:internals/_fake_now

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._fake_now(p_value text) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not (select s.allow_fake_clock from pgflight.settings s) then
    raise exception using
      errcode = 'ZF009',
      message = 'the fake clock is disabled',
      detail  = format('pgflight.fake_now is set to %L in this session', p_value),
      hint    = 'RESET pgflight.fake_now, or (tests only) UPDATE pgflight.settings SET allow_fake_clock = true.';
  end if;
  begin
    return p_value::timestamptz;
  exception when invalid_datetime_format or datetime_field_overflow or invalid_parameter_value then
    raise exception using
      errcode = '22023',
      message = 'pgflight.fake_now is not an instant',
      detail  = format('pgflight.fake_now is set to %L in this session', left(p_value, 100)),
      hint    = 'SET pgflight.fake_now to a timestamptz such as ''2030-01-01 00:00:00+00'', or RESET it.';
  end;
end
$$;

COMMENT ON FUNCTION pgflight._fake_now(p_value text) IS 'Internal: the fake instant of a test session. Raises ZF009 unless settings.allow_fake_clock, 22023 when the value is not an instant.';

REVOKE ALL ON FUNCTION pgflight._fake_now(p_value text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._fake_now(p_value text) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._fake_now(p_value text) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._fake_now(p_value text) TO pgflight_reader;

commit;
