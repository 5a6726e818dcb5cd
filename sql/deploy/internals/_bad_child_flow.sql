-- Deploy pgflight:internals/_bad_child_flow

begin;

set local role pgflight_owner;

-- True when a child's options carry a malformed concurrency key or limit (spawn_children refuses
-- the whole call with 22023, naming the child).
CREATE OR REPLACE FUNCTION pgflight._bad_child_flow(p_options jsonb) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._concurrency_option(coalesce(p_options, '{}'));
  return false;
exception when invalid_parameter_value then
  return true;
end
$$;

COMMENT ON FUNCTION pgflight._bad_child_flow(p_options jsonb) IS 'Internal: true when a child''s concurrency_key / concurrency_limit options are malformed.';

REVOKE ALL ON FUNCTION pgflight._bad_child_flow(p_options jsonb) FROM PUBLIC;

commit;
