-- Deploy pgflight:internals/_require_lane

begin;

set local role pgflight_owner;

-- Raise ZF012 unless the login may act in p_lane on p_workspace_id (null: every workspace).
-- The message names the login and the lane; another tenant's workspace only by id.
CREATE OR REPLACE FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not pgflight._may(p_lane, p_workspace_id) then
    raise exception using
      errcode = 'ZF012',
      message = format('%s refused: login %s may not act as %s on %s', p_operation, session_user, p_lane,
                       coalesce('workspace ' || p_workspace_id, 'every workspace')),
      detail  = format('no %s grant for login %s on %s in pgflight.workspace_grants', p_lane, session_user,
                       coalesce('workspace ' || p_workspace_id, 'every workspace (this call acts on all of them)')),
      hint    = format('The owner grants it: select pgflight.grant_workspace(%L, <workspace name, or null for all>, %L);',
                       session_user, p_lane);
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) IS 'Internal: raise ZF012 unless the login may act in this lane on this workspace (null: every one).';

REVOKE ALL ON FUNCTION pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text) FROM PUBLIC;

commit;
