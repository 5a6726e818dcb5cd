-- Deploy pgflight:functions/find_effect

begin;

set local role pgflight_owner;

-- Look up the receipt of effect p_key of step p_step_id: one row when the effect already
-- happened (by any attempt), none otherwise. A read: any worker of the tree may call it. A step
-- outside the login's workspaces answers exactly as a step that does not exist: no row (one answer
-- for what a login may not see; docs/security.md).
CREATE OR REPLACE FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) RETURNS TABLE(effect_id bigint, result jsonb, attempt_id bigint, recorded_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- the lane on the step's workspace, in the one statement: outside it, no row, as for an unknown step
  return query
    select e.id, e.result, e.attempt_id, e.recorded_at
      from pgflight.effects e
     where e.step_id = p_step_id and e.effect_key = p_key
       and pgflight._may('reader', (select r.workspace_id from pgflight.steps s join pgflight.runs r on r.id = s.run_id
                                     where s.id = p_step_id));
end
$$;

COMMENT ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) IS 'The receipt of a step''s effect by key: (effect_id, result, attempt_id, recorded_at), or no row.';

REVOKE ALL ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.find_effect(p_step_id bigint, p_key text) TO pgflight_worker;

commit;
