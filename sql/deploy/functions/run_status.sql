-- Deploy pgflight:functions/run_status

begin;

set local role pgflight_owner;

-- One run's status with counts of its steps by the status of their latest attempt, the number of
-- attempts, and the root step's result or error. Errors: ZF003 unknown run.
CREATE OR REPLACE FUNCTION pgflight.run_status(p_run_id bigint) RETURNS TABLE(run_id bigint, workspace text, recipe text, status text, created_at timestamp with time zone, finished_at timestamp with time zone, steps_total bigint, steps_queued bigint, steps_running bigint, steps_waiting bigint, steps_succeeded bigint, steps_dead_letter bigint, steps_cancelled bigint, attempts_total bigint, result jsonb, error jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pgflight._require_lane_on_run('reader', p_run_id, 'run_status');  -- tenants
  return query
  select r.id, w.name, r.recipe, r.status, r.created_at, r.finished_at,
         count(s.id),
         count(s.id) filter (where a.status = 'queued'),
         count(s.id) filter (where a.status in ('claimed', 'running', 'cancel_requested')),
         count(s.id) filter (where a.status in ('awaiting_children', 'awaiting_approval')),
         count(s.id) filter (where a.status = 'succeeded'),
         count(s.id) filter (where a.status = 'dead_letter'),
         count(s.id) filter (where a.status = 'cancelled'),
         coalesce(sum(s.last_attempt_no), 0)::bigint,
         (select ra.result from pgflight.step_attempts ra join pgflight.steps rs on rs.id = ra.step_id
           where rs.id = r.root_step_id and ra.attempt_no = rs.last_attempt_no),
         (select ra.error from pgflight.step_attempts ra join pgflight.steps rs on rs.id = ra.step_id
           where rs.id = r.root_step_id and ra.attempt_no = rs.last_attempt_no)
    from pgflight.runs r
    join pgflight.workspaces w on w.id = r.workspace_id
    left join pgflight.steps s on s.run_id = r.id
    left join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where r.id = p_run_id
   group by r.id, w.name;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id);
  end if;
end
$$;

COMMENT ON FUNCTION pgflight.run_status(p_run_id bigint) IS 'A run''s status, step counts by status, attempts, and the root result. Errors: ZF003 unknown run.';

REVOKE ALL ON FUNCTION pgflight.run_status(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_status(p_run_id bigint) TO pgflight_worker;

commit;
