-- Deploy pgflight:functions/dead_letter_page

begin;

set local role pgflight_owner;

-- Read: dead-lettered steps (whose latest attempt is dead_letter), newest first, keyset-paged by
-- attempt id (p_after: the last attempt_id of the previous page; null for the first), at most
-- p_limit (1..500). Walks step_attempts_dead_letter_idx: the cost is the page, not the history.
-- Only the workspaces the login may read. Errors: 22023 bad limit.
CREATE OR REPLACE FUNCTION pgflight.dead_letter_page(p_after bigint DEFAULT NULL::bigint, p_limit integer DEFAULT 50) RETURNS TABLE(attempt_id bigint, step_id bigint, run_id bigint, workspace text, step_key text, recipe text, attempt_no integer, failed_attempts integer, reason text, error jsonb, finished_at timestamp with time zone)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 500);
  return query
  select a.id, s.id, s.run_id, w.name, s.step_key, s.recipe, a.attempt_no, s.failed_attempts, a.reason,
         a.error, a.finished_at
    from pgflight.step_attempts a
    join pgflight.steps s on s.id = a.step_id and s.last_attempt_no = a.attempt_no
    join pgflight.runs r on r.id = s.run_id
    join pgflight.workspaces w on w.id = r.workspace_id
   where a.status = 'dead_letter' and (p_after is null or a.id < p_after)
     and (v_lanes is null or r.workspace_id = any(v_lanes))
   order by a.id desc
   limit p_limit;
end
$$;

COMMENT ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) IS 'Read: dead-lettered steps with their last error, newest first, keyset-paged by attempt id. Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.dead_letter_page(p_after bigint, p_limit integer) TO pgflight_operator;

commit;
