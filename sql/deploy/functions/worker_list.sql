-- Deploy pgflight:functions/worker_list

begin;

set local role pgflight_owner;

-- Read: workers not stopped or seen in the last hour, most recently seen first, at most p_limit
-- (1..1000), each with the attempts it holds now (leased: claimed, running, cancel_requested) as
-- a JSON array of {attempt_id, step_id, run_id, recipe, status, lease_expires_at}. Fencing tokens
-- are left out: they are capabilities of their holder. The held attempts come from the partial
-- index on leased attempts, so the cost is what is in flight. Tenancy: a login that may
-- read only some workspaces sees only the workers holding an attempt there, and only those
-- attempts (an idle worker may serve any tenant). Errors: 22023 bad limit.
CREATE OR REPLACE FUNCTION pgflight.worker_list(p_limit integer DEFAULT 200) RETURNS TABLE(worker_id bigint, name text, hostname text, pid integer, recipes text[], started_at timestamp with time zone, last_seen_at timestamp with time zone, stopped_at timestamp with time zone, alive boolean, held jsonb)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 1000);
  return query
  with leased as (
    -- what every worker holds, read once from the leased-attempts index
    select a.worker_id, jsonb_agg(jsonb_build_object(
             'attempt_id', a.id, 'step_id', a.step_id, 'run_id', a.run_id, 'recipe', a.recipe,
             'status', a.status, 'lease_expires_at', a.lease_expires_at) order by a.id) as held
      from pgflight.step_attempts a
     where a.status in ('claimed', 'running', 'cancel_requested')
       and (v_lanes is null or exists (select from pgflight.runs r
                                        where r.id = a.run_id and r.workspace_id = any(v_lanes)))
     group by a.worker_id
  )
  select w.id, w.name, w.hostname, w.pid, w.recipes, w.started_at, w.last_seen_at, w.stopped_at,
         w.stopped_at is null and w.last_seen_at > v_now - interval '60 seconds',
         coalesce(l.held, '[]')
    from pgflight.workers w
    left join leased l on l.worker_id = w.id
   where (w.stopped_at is null or w.last_seen_at > v_now - interval '1 hour')
     and (v_lanes is null or l.worker_id is not null)
   order by w.last_seen_at desc, w.id desc
   limit p_limit;
end
$$;

COMMENT ON FUNCTION pgflight.worker_list(p_limit integer) IS 'Read: live and recently seen workers with the attempts each holds (no fencing tokens). Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.worker_list(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.worker_list(p_limit integer) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.worker_list(p_limit integer) TO pgflight_operator;

commit;
