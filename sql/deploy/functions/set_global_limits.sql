-- Deploy pgflight:functions/set_global_limits

begin;

set local role pgflight_owner;

-- Set the engine-wide in-flight cap. options: max_in_flight (leased attempts across all
-- workspaces, 0 .. 1e6; null removes it), counted in striped slot rows (tables/flow_slots):
-- concurrent claims each take a share, none waits. Returns the cap now in force. Errors: 22023 unknown option or out of range.
CREATE OR REPLACE FUNCTION pgflight.set_global_limits(p_options jsonb) RETURNS TABLE(max_in_flight integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane('operator', null, 'set_global_limits');  -- acts on every workspace
  perform pgflight._require_known_keys(p_options, array['max_in_flight']);
  if p_options ? 'max_in_flight' then
    update pgflight.settings s set max_in_flight = pgflight._limit_option(p_options, 'max_in_flight', 0, 1e6, true)::integer;
    -- the cap's slot stripes (tables/flow_slots), rebuilt and reconciled
    perform pgflight._set_slot_cap(0, s.max_in_flight) from pgflight.settings s;
  end if;
  return query select s.max_in_flight from pgflight.settings s;
end
$$;

COMMENT ON FUNCTION pgflight.set_global_limits(p_options jsonb) IS 'Set the global max_in_flight (null removes). Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.set_global_limits(p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.set_global_limits(p_options jsonb) TO pgflight_operator;

commit;
