-- Deploy pgflight:internals/_lease_attempts

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
declare
  v_max_lease double precision := pgflight._limit('lease_s');
  v_max_runtime double precision := pgflight._limit('runtime_s');
begin
  -- a lease counted against an in-flight cap (global or its workspace's) is clamped to the
  -- ceiling of capped leases: one claim cannot hold a capped slot for a day (read only then)
  if p_slots <> 0 then
    select least(v_max_lease, s.max_lease_s_capped) into v_max_lease from pgflight.settings s;
  end if;
  -- PL/pgSQL rather than SQL: its plan is cached across calls, a SQL function's is not; and the
  -- generic plan from the first call on (plan_cache_mode): a custom plan was planned again on
  -- every call, a large part of the claim's cost
  return query
  with claimed as (
    update pgflight.step_attempts a
       set status = case when p_start then 'running' else 'claimed' end, worker_id = p_worker_id,
           fencing_token = nextval('pgflight.fencing_tokens'),
           claimed_at = p_now, slots = p_slots,
           started_at = case when p_start then p_now end,
           -- clamped to the documented maxima: a step stored before the options were
           -- checked (lease_s 1e13) cannot make this set-based claim raise for everyone
           lease_s = least(coalesce(s.lease_s, p_lease_s), v_max_lease),
           lease_expires_at = p_now + make_interval(secs => least(coalesce(s.lease_s, p_lease_s), v_max_lease)),
           deadline_at = p_now + make_interval(secs => least(s.max_runtime_s, v_max_runtime)),
           claim_event_id = case when p_start then nextval('pgflight.events_id_seq') end
      from pgflight.steps s
     where a.id = any (p_ids) and s.id = a.step_id
    returning a.id, a.fencing_token, a.step_id, a.run_id, s.parent_id, s.step_key, a.attempt_no,
              a.recipe, s.input, a.lease_expires_at, a.deadline_at, a.status
  ), logged as (
    -- the events row of a claim without start, in the same statement
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
    select p_now, c.run_id, c.step_id, c.id, 'queued', c.status, p_worker_id, 'claimed' from claimed c
     where not p_start
  )
  select c.id, c.fencing_token, c.step_id, c.run_id, c.parent_id, c.step_key, c.attempt_no, c.recipe,
         c.input, c.lease_expires_at, c.deadline_at
    from claimed c;
end
$$;

COMMENT ON FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) IS 'Internal: lease locked queued attempts to a worker (token, lease, caps, events row or claim_event_id); a lease under an in-flight cap is clamped to settings.max_lease_s_capped.';

REVOKE ALL ON FUNCTION pgflight._lease_attempts(p_worker_id bigint, p_ids bigint[], p_lease_s double precision, p_start boolean, p_now timestamp with time zone, p_slots smallint) FROM PUBLIC;

commit;
