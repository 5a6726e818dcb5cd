-- Deploy pgflight:internals/_cancel_steps

begin;

set local role pgflight_owner;

-- Cancel every live attempt of the given steps. Leased attempts become cancel_requested (their
-- worker learns it on the next heartbeat); the rest become cancelled at once. Attempts are locked
-- deepest first, so a concurrent child completion (child attempt, then parent row) cannot form a
-- lock cycle with us. Parents inside the set are not poked: they are cancelled here too.
CREATE OR REPLACE FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) RETURNS TABLE(cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_ids bigint[];
begin
  -- Lock the live attempts, deepest first, in a statement of its own: the UPDATE below then runs
  -- with a fresh snapshot and sees each row as it is now (a claim that committed while we waited
  -- for its lock is seen as claimed, with its worker and token).
  select array_agg(l.id) into v_ids from (
    select a.id
      from pgflight.step_attempts a
      join unnest(p_step_ids) as t(step_id) on t.step_id = a.step_id
      join pgflight.steps s on s.id = a.step_id
     where a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval')
     order by s.depth desc, a.id
       for update of a) l;

  return query
  with changed as (
    update pgflight.step_attempts a
       set status = case when a.status in ('claimed', 'running') then 'cancel_requested' else 'cancelled' end,
           finished_at = case when a.status in ('claimed', 'running') then null else v_now end,
           reason = 'cancelled'
      from (select a0.id, a0.status as old_status from pgflight.step_attempts a0 where a0.id = any (v_ids)) t
     where a.id = t.id
       and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval')
    returning a.id, a.step_id, a.run_id, a.worker_id, t.old_status, a.status
  ), logged as (
    insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason, actor, detail)
    select v_now, c.run_id, c.step_id, c.id, c.old_status, c.status, c.worker_id, c.status, p_actor,
           case when p_reason is null then null else jsonb_build_object('note', p_reason) end
      from changed c
  )
  select count(*) filter (where c.status = 'cancelled')::integer,
         count(*) filter (where c.status = 'cancel_requested')::integer
    from changed c;
end
$$;

COMMENT ON FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) IS 'Internal: cancel the live attempts of these steps; returns how many were cancelled and how many were leased and became cancel_requested.';

REVOKE ALL ON FUNCTION pgflight._cancel_steps(p_step_ids bigint[], p_actor text, p_reason text) FROM PUBLIC;

commit;
