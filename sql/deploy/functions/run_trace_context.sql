-- Deploy pgflight:functions/run_trace_context

begin;

set local role pgflight_owner;

-- Read: the W3C trace context (traceparent) a run was submitted under, or null. submit_run keeps
-- its options, so a client that submits inside a span passes {"traceparent": "00-…"} there; every
-- step of the run (children, retries, replays), on any worker, reads it back here and joins that
-- trace. One primary-key lookup; workers call it once per attempt, and only while tracing is on.
-- Null too for a run in a workspace the login may not read.
CREATE OR REPLACE FUNCTION pgflight.run_trace_context(p_run_id bigint) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select r.options ->> 'traceparent' from pgflight.runs r
   where r.id = p_run_id
     and ((select pgflight._lane_workspaces('reader')) is null
          or r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}')))
$$;

COMMENT ON FUNCTION pgflight.run_trace_context(p_run_id bigint) IS 'Read: the traceparent a run was submitted under (options.traceparent), or null.';

REVOKE ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight.run_trace_context(p_run_id bigint) TO pgflight_reader;

commit;
