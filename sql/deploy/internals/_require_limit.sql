-- Deploy pgflight:internals/_require_limit

begin;

set local role pgflight_owner;

-- Raise 22023 unless p_value is between 1 and p_max; p_name names the argument in the message.
CREATE OR REPLACE FUNCTION pgflight._require_limit(p_name text, p_value integer, p_max integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_value is null or p_value < 1 or p_value > p_max then
    raise exception using errcode = '22023', message = format('%s must be between 1 and %s', p_name, p_max),
      detail = format('got %s', coalesce(p_value::text, 'null')),
      hint = 'Page with the keyset argument instead of a larger limit.';
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_limit(p_name text, p_value integer, p_max integer) IS 'Internal: 22023 unless a read''s row limit is between 1 and p_max.';

REVOKE ALL ON FUNCTION pgflight._require_limit(p_name text, p_value integer, p_max integer) FROM PUBLIC;

commit;
