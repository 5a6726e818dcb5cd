-- Deploy pgflight:internals/_settle_tokens

begin;

set local role pgflight_owner;

-- A recorded model call's tokens (input + output) into its workspace's window (the caller calls it
-- when the workspace has a model_tokens_per_min limit, p_limit): the actual tokens, less the
-- estimate its admission added when p_reserved (the call was admitted for this attempt and iteration).
CREATE OR REPLACE FUNCTION pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_delta bigint := p_tokens - case when p_reserved then pgflight._token_estimate(p_run, p_limit) else 0 end;
begin
  if v_delta = 0 then
    return;
  end if;
  insert into pgflight.engine_locks (scope) values ('model_tokens:' || p_run.workspace_id) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'model_tokens:' || p_run.workspace_id for update;
  insert into pgflight.model_token_windows as w (workspace_id, bucket, tokens)
  values (p_run.workspace_id, to_timestamp(floor(extract(epoch from p_now) / 5) * 5), v_delta)
  on conflict on constraint model_token_window_is_unique do update set tokens = w.tokens + excluded.tokens;
end
$$;

COMMENT ON FUNCTION pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone) IS 'Internal: put a recorded call''s model tokens in its workspace''s window (less its admitted estimate).';

REVOKE ALL ON FUNCTION pgflight._settle_tokens(p_run pgflight.agent_runs, p_limit bigint, p_tokens bigint, p_reserved boolean, p_now timestamp with time zone) FROM PUBLIC;

commit;
