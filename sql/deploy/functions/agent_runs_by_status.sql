-- Deploy pgflight:functions/agent_runs_by_status

begin;

set local role pgflight_owner;

-- Read: the agent runs whose step ended with p_status (default succeeded), oldest first, after
-- agent run id p_after (keyset paging), at most p_limit. For pgflight export-dataset.
CREATE OR REPLACE FUNCTION pgflight.agent_runs_by_status(p_status text DEFAULT 'succeeded'::text, p_after bigint DEFAULT 0, p_limit integer DEFAULT 1000) RETURNS TABLE(agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text, iterations integer, usd numeric, result jsonb)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.iterations, r.usd, a.result
    from pgflight.agent_runs r
    join pgflight.steps s on s.id = r.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   cross join (select pgflight._lane_workspaces('reader') as ids) ws  -- the login's workspaces
   where a.status = p_status and r.id > p_after
     and (ws.ids is null or exists (select from pgflight.runs x where x.id = r.run_id and x.workspace_id = any (ws.ids)))
   order by r.id
   limit pgflight._check_limit(p_limit)  -- 22023 for a negative limit
$$;

COMMENT ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) IS 'Read: agent runs whose step status is p_status, keyset-paged by agent run id.';

REVOKE ALL ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.agent_runs_by_status(p_status text, p_after bigint, p_limit integer) TO pgflight_reader;

commit;
