-- Deploy pgflight:internals/_lock_subtree

begin;

set local role pgflight_owner;

-- Lock every live attempt of p_top's subtree, deepest first then id (the order cancel uses), and
-- keep them locked: no attempt of the subtree can then start, end or be created under it by
-- another transaction (each such write needs one of these rows). The first read waits (or, with
-- p_nowait, raises 55P03: a sweep leaves the row to its next pass). An attempt committed after
-- that read's snapshot (a sibling's retry, a reclaim's successor, a child spawned by a
-- transaction this read waited for) is not among the rows it locked, so the subtree is read
-- again, NOWAIT, until a read finds no live attempt it does not already hold. When another
-- transaction holds such a new attempt, every lock taken here is given back (the block is rolled
-- back), this waits for that transaction with nothing held, and starts over: a wait while holding
-- the subtree would be out of order (that transaction may need a parked attempt held here).
-- Errors: 55P03 with p_nowait when a row is in use; lock_timeout as set.
CREATE OR REPLACE FUNCTION pgflight._lock_subtree(p_top bigint, p_nowait boolean) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_steps bigint[];
  v_prev bigint[];
  v_ids bigint[];
  v_busy bigint[];
begin
  loop
    v_prev := null;
    begin
      loop
        v_steps := pgflight._tree_steps(null, p_top);
        if p_nowait or v_prev is not null then
          select array_agg(l.id order by l.id) into v_ids from (
            select a.id from pgflight.step_attempts a
              join unnest(v_steps) as t(id) on t.id = a.step_id
              join pgflight.steps s on s.id = a.step_id
             where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
                                'awaiting_approval')
             order by s.depth desc, a.id
               for update of a nowait) l;
        else
          select array_agg(l.id order by l.id) into v_ids from (
            select a.id from pgflight.step_attempts a
              join unnest(v_steps) as t(id) on t.id = a.step_id
              join pgflight.steps s on s.id = a.step_id
             where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children',
                                'awaiting_approval')
             order by s.depth desc, a.id
               for update of a) l;
        end if;
        -- the rows locked before cannot have changed (they are ours): the same set means nothing new
        exit when v_ids is not distinct from v_prev;
        v_prev := coalesce(v_ids, '{}');
      end loop;
      return;
    exception when lock_not_available then
      if p_nowait or v_prev is null then
        raise;
      end if;
    end;
    -- a new attempt is held elsewhere: wait for its transaction, holding nothing, then start over
    select array_agg(a.id) into v_busy
      from pgflight.step_attempts a join unnest(pgflight._tree_steps(null, p_top)) as t(id) on t.id = a.step_id
     where a.status in ('queued', 'claimed', 'running', 'cancel_requested', 'awaiting_children', 'awaiting_approval')
       and a.id <> all (v_prev);
    begin
      perform from pgflight.step_attempts a where a.id = any (v_busy) for share of a;
      raise exception using errcode = 'ZF099', message = 'internal: give the share locks back';
    exception when sqlstate 'ZF099' then
      null;
    end;
  end loop;
end
$$;

COMMENT ON FUNCTION pgflight._lock_subtree(p_top bigint, p_nowait boolean) IS 'Internal: lock every live attempt of a subtree, deepest first, including attempts committed while it waited; NOWAIT (55P03) when p_nowait.';

REVOKE ALL ON FUNCTION pgflight._lock_subtree(p_top bigint, p_nowait boolean) FROM PUBLIC;

commit;
