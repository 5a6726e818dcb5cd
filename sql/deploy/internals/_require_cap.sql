-- Deploy pgflight:internals/_require_cap

begin;

set local role pgflight_owner;

-- Raise ZF005 when p_value exceeds the cap p_limit, the value of settings column p_cap.
CREATE OR REPLACE FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value > p_limit then
    raise exception using
      errcode = 'ZF005',
      message = format('%s over the cap settings.%s', p_what, p_cap),
      detail  = format('%s is %s; settings.%s is %s', p_what, p_value, p_cap, p_limit),
      hint    = format('Send less (store a large payload elsewhere and pass a reference), or raise the cap: '
                       'UPDATE pgflight.settings SET %s = ...', p_cap);
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) IS 'Internal: raise ZF005 naming settings.p_cap when p_value is over it.';

REVOKE ALL ON FUNCTION pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision, p_what text) FROM PUBLIC;

commit;
