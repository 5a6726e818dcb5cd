-- Deploy pgflight:functions/heartbeat

begin;

set local role pgflight_owner;

-- Renew, in one call, the leases of every attempt a worker holds. p_attempt_ids and p_tokens
-- are parallel arrays. A lease is renewed (by the attempt's own lease_s, seconds) only when the
-- attempt is still claimed or running, owned by this worker and carries this token (invariant 3).
-- Returns one row per attempt asked about, in the per-row outcome words every batch function
-- shares (docs/worker_protocol.md): status 'held' (renewed), 'cancelled' (stop the work and
-- release_step to acknowledge) or 'lease_lost' (reclaimed, timed out or finished: abandon it and
-- write nothing). Never raises for a lost lease. An attempt of another worker, or outside the
-- login's worker lanes, answers lease_lost, as an unknown one does. Errors: 22023 arrays of different lengths,
-- a NULL worker id, a NULL element of either array or an array of more than one dimension (the
-- fence's rule: internals/_fencing; the whole call is refused, nothing renewed), ZF010 unknown
-- or stopped worker.
CREATE OR REPLACE FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) RETURNS TABLE(attempt_id bigint, status text, lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_ok bigint[];
  v_ok_tokens bigint[];
  v_until timestamptz[];
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0) then
    raise exception using errcode = '22023', message = 'attempt ids and tokens differ in length',
      detail = format('%s attempt ids, %s tokens', cardinality(p_attempt_ids), cardinality(p_tokens)),
      hint = 'Pass one fencing token per attempt id, in the same order.';
  end if;
  -- a NULL never matches a token (the fence's rule): refused before anything is read. One
  -- expression, no query (array_position searches one-dimensional arrays only: a deeper one is
  -- refused as such first)
  if p_worker_id is null then
    perform pgflight._null_refused('heartbeat', 'the worker id');
  end if;
  if (case when array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then true
           else array_position(p_attempt_ids, null) is not null or array_position(p_tokens, null) is not null end) then
    perform pgflight._refuse_fence_arrays('heartbeat', p_attempt_ids, p_tokens);
  end if;
  -- the worker must be live and registered by this login; another login's id is unknown here
  update pgflight.workers set last_seen_at = v_now
   where id = p_worker_id and stopped_at is null and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown or stopped worker %s', p_worker_id),
      detail = format('no live worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Call register_worker first and use the id it returns.';
  end if;

  -- Renew what this worker still owns with this token.
  with asked as (
    select t.attempt_id, t.token from unnest(p_attempt_ids, p_tokens) as t(attempt_id, token)
  ), renewed as (
    update pgflight.step_attempts a
       set lease_expires_at = v_now + make_interval(secs => a.lease_s)
      from asked q
     where a.id = q.attempt_id and a.fencing_token = q.token and a.worker_id = p_worker_id
       and a.status in ('claimed', 'running')
    returning a.id, a.fencing_token, a.lease_expires_at
  )
  select array_agg(r.id), array_agg(r.fencing_token), array_agg(r.lease_expires_at)
    into v_ok, v_ok_tokens, v_until from renewed r;

  -- The others are read in a statement of its own, so an attempt whose cancel committed while
  -- this heartbeat waited for its row lock reads as cancelled, not lost.
  return query
  select q.attempt_id,
         case when n.i is not null then 'held'
              when a.status = 'cancel_requested' and a.fencing_token = q.token and a.worker_id = p_worker_id
                then 'cancelled'
              else 'lease_lost' end,
         v_until[n.i]
    from unnest(p_attempt_ids, p_tokens) as q(attempt_id, token)
    left join lateral (select i from generate_subscripts(v_ok, 1) as i
                        where v_ok[i] = q.attempt_id and v_ok_tokens[i] = q.token) n on true
    left join pgflight.step_attempts a on a.id = q.attempt_id;
end
$$;

COMMENT ON FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) IS 'Renew the leases a worker holds; per attempt held | cancelled | lease_lost. Errors: 22023 (lengths differ, a NULL), ZF010.';

REVOKE ALL ON FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.heartbeat(p_worker_id bigint, p_attempt_ids bigint[], p_tokens bigint[]) TO pgflight_worker;

commit;
