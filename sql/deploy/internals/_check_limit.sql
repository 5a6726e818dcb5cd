-- Deploy pgflight:internals/_check_limit

begin;

set local role pgflight_owner;

-- A row limit argument (sweeps, paged reads): NULL or 0 to 2^31-1, else 22023 (a negative
-- LIMIT would raise 2201W inside the function). Returns it, for use in LIMIT.
CREATE OR REPLACE FUNCTION pgflight._check_limit(p_limit integer) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_limit < 0 then
    perform pgflight._check_arg('limit', p_limit, 0, 2147483647);
  end if;
  return p_limit;
end
$$;

COMMENT ON FUNCTION pgflight._check_limit(p_limit integer) IS 'Internal: a row limit, NULL or >= 0, else 22023.';

REVOKE ALL ON FUNCTION pgflight._check_limit(p_limit integer) FROM PUBLIC;

commit;
