-- Deploy pgflight:internals/_fan_in_clear

begin;

set local role pgflight_owner;

-- A parent that ended (its children cancelled by _cancel_tree first): its counter and stripes go.
CREATE OR REPLACE FUNCTION pgflight._fan_in_clear(p_parent bigint) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  delete from pgflight.fan_in_stripes f where f.parent_id = p_parent;
  update pgflight.steps set children_pending = 0 where id = p_parent;
$$;

COMMENT ON FUNCTION pgflight._fan_in_clear(p_parent bigint) IS 'Internal: zero the fan-in counter of a parent that ended, stripes included.';

REVOKE ALL ON FUNCTION pgflight._fan_in_clear(p_parent bigint) FROM PUBLIC;

commit;
