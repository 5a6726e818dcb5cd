-- Deploy pgflight:functions/agent_transcript
begin;
set local role pgflight_owner;

-- Read: the flight recorder of an agent run without side effects, with each model call's usage and
-- USD on its iteration's rows. An agent run outside the login's workspaces answers exactly as one
-- that does not exist: no row.
create or replace function pgflight.agent_transcript(p_agent_run_id bigint)
returns table (iteration integer, seq integer, role text, block_type text, tool_use_id text, tool_name text,
               content jsonb, status text, tokens integer, attempt_id bigint, created_at timestamptz,
               model text, input_tokens bigint, output_tokens bigint, cache_creation_tokens bigint,
               cache_read_tokens bigint, usd numeric, stop_reason text)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- the lane on the agent run's workspace, in the one statement: outside it, no row
  return query
    select t.iteration, t.seq, t.role, t.block_type, t.tool_use_id, t.tool_name, t.content, t.status, t.tokens,
           t.attempt_id, t.created_at, c.model, c.input_tokens, c.output_tokens, c.cache_creation_tokens,
           c.cache_read_tokens, c.usd, c.stop_reason
      from pgflight.traces t
      left join pgflight.costs c on c.agent_run_id = t.agent_run_id and c.iteration = t.iteration
                                     and not c.lease_lost  -- orphan costs (record_orphan_cost) have no traces
     where t.agent_run_id = p_agent_run_id
       and pgflight._may('reader', (select r.workspace_id from pgflight.agent_runs r where r.id = p_agent_run_id))
     order by t.iteration, t.seq;
end
$$;
comment on function pgflight.agent_transcript(bigint) is 'Read: an agent run''s trace rows in order, with per-call costs.';
grant execute on function pgflight.agent_transcript(bigint) to pgflight_operator, pgflight_reader;

commit;
