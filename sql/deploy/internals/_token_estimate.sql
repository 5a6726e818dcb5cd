-- Deploy pgflight:internals/_token_estimate

begin;

set local role pgflight_owner;

-- Model tokens per minute (workspace_limits.model_tokens_per_min): the tokens (input +
-- output) a call of this agent is expected to use: its average per call so far (0 for its first
-- call), at most p_limit. Admission adds it to the window and record_model_call replaces it by the
-- actual tokens; both compute it from the same totals (they change only when a call is recorded).
CREATE OR REPLACE FUNCTION pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_run.iterations = 0 then
    return 0;
  end if;
  return least(ceil((p_run.input_tokens + p_run.output_tokens)::numeric / p_run.iterations)::bigint, p_limit);
end
$$;

COMMENT ON FUNCTION pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint) IS 'Internal: model tokens a call of this agent is expected to use (its average so far, at most p_limit).';

REVOKE ALL ON FUNCTION pgflight._token_estimate(p_run pgflight.agent_runs, p_limit bigint) FROM PUBLIC;

commit;
