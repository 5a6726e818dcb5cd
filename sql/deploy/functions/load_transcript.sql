-- Deploy pgflight:functions/load_transcript

begin;

set local role pgflight_owner;

-- The transcript of an agent for its resumed attempt, in order (iteration, seq). First every tool
-- call left in_flight by an earlier run of the step is marked interrupted (invariant 9): the
-- caller must verify it (tool verify hook or effect receipt) before any retry, or tell the model.
-- stop_reason and usd are the model call's, repeated on each row of its iteration.
-- Errors: ZF001, ZF002, ZF003 (fence).
CREATE OR REPLACE FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) RETURNS TABLE(iteration integer, seq integer, role text, block_type text, tool_use_id text, tool_name text, content jsonb, status text, attempt_id bigint, stop_reason text, usd numeric)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_run pgflight.agent_runs;
begin
  v_run := pgflight._agent_fence(p_attempt_id, p_token, p_agent_run_id, 'load_transcript');
  update pgflight.traces t set status = 'interrupted', updated_at = v_now
   where t.agent_run_id = v_run.id and t.status = 'in_flight';
  return query
    select t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name, t.content, t.status,
           t.attempt_id, c.stop_reason, c.usd
      from pgflight.traces t
      left join pgflight.costs c on c.agent_run_id = t.agent_run_id and c.iteration = t.iteration
                                   and not c.lease_lost  -- orphan costs (record_orphan_cost) have no traces
     where t.agent_run_id = v_run.id
     order by t.iteration, t.seq;
end
$$;

COMMENT ON FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) IS 'Resume: mark in-flight tool calls interrupted and return the transcript in order. Errors: ZF001, ZF002, ZF003.';

REVOKE ALL ON FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.load_transcript(p_attempt_id bigint, p_token bigint, p_agent_run_id bigint) TO pgflight_worker;

commit;
