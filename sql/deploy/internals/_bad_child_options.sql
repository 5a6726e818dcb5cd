-- Deploy pgflight:internals/_bad_child_options

begin;

set local role pgflight_owner;

-- Kept for callers of the released definition: true when a child's options are malformed.
CREATE OR REPLACE FUNCTION pgflight._bad_child_options(p_options jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._check_options('spawn_children child', p_options);
  return false;
exception when sqlstate '22023' then
  return true;
end
$$;

COMMENT ON FUNCTION pgflight._bad_child_options(p_options jsonb) IS 'Internal: true when a child''s options object fails _check_options.';

REVOKE ALL ON FUNCTION pgflight._bad_child_options(p_options jsonb) FROM PUBLIC;

commit;
