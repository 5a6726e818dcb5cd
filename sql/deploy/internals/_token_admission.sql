-- Deploy pgflight:internals/_token_admission

begin;

set local role pgflight_owner;

-- Admission against the workspace's model tokens per minute p_limit (the caller skips it for a
-- workspace without that limit): the tokens
-- of the workspace's rolling minute (model_token_windows: 5-second buckets; a bucket that overlaps
-- the last 60 s counts whole, so the check errs on the safe side) plus this call's estimate must
-- stay within the limit, and the window must not be full already. Admissions and settlements of
-- one workspace take turns on the engine_locks row 'model_tokens:<workspace id>' (an advisory key
-- before, which any login could hold and so stall every model call of the workspace; no login can
-- lock the row), so concurrent agents cannot both take
-- the last tokens. Admitted: the estimate is added to the current bucket and null returned.
-- Refused: nothing is added, and the refusal {sqlstate ZF013, message, detail, hint,
-- retry_after_s} says in how many seconds enough of the window will have passed (at least 1).
CREATE OR REPLACE FUNCTION pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_limit bigint := p_limit;
  v_est bigint := pgflight._token_estimate(p_run, p_limit);
  v_used bigint;
  v_free_at timestamptz;
  v_retry integer;
begin
  insert into pgflight.engine_locks (scope) values ('model_tokens:' || p_run.workspace_id) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'model_tokens:' || p_run.workspace_id for update;
  select coalesce(sum(w.tokens), 0) into v_used
    from pgflight.model_token_windows w
   where w.workspace_id = p_run.workspace_id and w.bucket > p_now - interval '65 s';
  if v_used < v_limit and v_used + v_est <= v_limit then
    if v_est > 0 then
      insert into pgflight.model_token_windows as w (workspace_id, bucket, tokens)
      values (p_run.workspace_id, to_timestamp(floor(extract(epoch from p_now) / 5) * 5), v_est)
      on conflict on constraint model_token_window_is_unique do update set tokens = w.tokens + excluded.tokens;
    end if;
    return null;
  end if;
  -- the first bucket whose passing leaves room: a bucket starting at b leaves the window at b + 65 s
  select min(x.bucket) into v_free_at
    from (select w.bucket, sum(w.tokens) over (order by w.bucket) as passed
            from pgflight.model_token_windows w
           where w.workspace_id = p_run.workspace_id and w.bucket > p_now - interval '65 s') x
   where v_used - x.passed < v_limit and v_used - x.passed + v_est <= v_limit;
  v_retry := greatest(ceil(extract(epoch from coalesce(v_free_at, p_now) + interval '65 s' - p_now)), 1)::integer;
  return jsonb_build_object(
    'sqlstate', 'ZF013',
    'message', format('model tokens per minute: workspace %s used %s of its %s tokens in the last minute',
                      p_run.workspace_id, v_used, v_limit),
    'detail',  format('scope=workspace cap=model_tokens_per_min workspace_id=%s used=%s limit=%s estimate=%s '
                      'window_s=60 retry_after_s=%s agent_run=%s', p_run.workspace_id, v_used, v_limit, v_est,
                      v_retry, p_run.id),
    'hint',    format('Wait %s s and ask again (the agent loop waits, heartbeating, without spending an attempt), '
                      'or raise model_tokens_per_min with set_workspace_limits.', v_retry),
    'retry_after_s', v_retry);
end
$$;

COMMENT ON FUNCTION pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone) IS 'Internal: check a model call against the workspace''s model_tokens_per_min and add its estimate; returns null or the ZF013 refusal with retry_after_s.';

REVOKE ALL ON FUNCTION pgflight._token_admission(p_run pgflight.agent_runs, p_limit bigint, p_now timestamp with time zone) FROM PUBLIC;

commit;
