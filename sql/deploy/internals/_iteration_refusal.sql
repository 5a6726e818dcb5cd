-- Deploy pgflight:internals/_iteration_refusal

begin;

set local role pgflight_owner;

-- The refusal (see _move_budget) when the agent may not make model call number p_iteration (its
-- max_iterations), else null.
CREATE OR REPLACE FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_iteration <= p_run.max_iterations then
    return null;
  end if;
  return jsonb_build_object(
    'message', format('budget exceeded: agent run %s may make %s model calls, this is call %s',
                      p_run.id, p_run.max_iterations, p_iteration),
    'detail',  format('scope=agent cap=max_iterations max_iterations=%s iteration=%s', p_run.max_iterations, p_iteration),
    'hint',    'Raise max_iterations for the agent (input caps, or the run''s max_iterations option).');
end
$$;

COMMENT ON FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) IS 'Internal: the ZF007 refusal when p_iteration passes the agent''s max_iterations, else null.';

REVOKE ALL ON FUNCTION pgflight._iteration_refusal(p_run pgflight.agent_runs, p_iteration integer) FROM PUBLIC;

commit;
