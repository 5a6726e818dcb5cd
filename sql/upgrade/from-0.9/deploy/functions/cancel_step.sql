-- Deploy pgflight:functions/cancel_step
begin;
set local role pgflight_owner;

-- Cancel one step and its whole subtree. The parent of the subtree is poked once the subtree
-- root is terminal, so a parent waiting on it wakes. Cancelling the root step cancels the run.
-- Locks: the attempts of the subtree its end may cancel, deepest first (_lock_subtree), then as
-- _cancel_tree and _step_finished. Errors: ZF003 unknown step.
create or replace function pgflight.cancel_step(p_step_id bigint, p_actor text default null, p_reason text default null)
returns table (step_id bigint, cancelled integer, cancel_requested integer)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_step record;
  v_c integer;
  v_r integer;
  v_root_status text;
begin
  perform pgflight._require_lane_on_step('operator', p_step_id, 'cancel_step');  -- issue 13: tenants
  select s.id, s.run_id, s.parent_id into v_step from pgflight.steps s where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_step.parent_id is null then
    return query select p_step_id, c.cancelled, c.cancel_requested
      from pgflight.cancel_run(v_step.run_id, p_actor, p_reason) c;
    return;
  end if;
  -- Lock order (docs/locking.md): every live attempt this cancel and its end may touch (the
  -- subtree of a fail-fast ancestor still waiting for its children, else this subtree) is locked
  -- before any steps row, deepest first then id; a sibling's completion under way is waited for
  -- here, not after the parent's row (which that completion takes next).
  perform pgflight._lock_subtree(coalesce(pgflight._cascade_root(p_step_id), p_step_id), false);
  select a.status into v_root_status from pgflight.step_attempts a
   where a.step_id = p_step_id
     and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval');
  select t.cancelled, t.cancel_requested into v_c, v_r
    from pgflight._cancel_tree(v_step.run_id, p_step_id, session_user::text, pgflight._actor_note(p_reason, p_actor)) t;
  -- the subtree root ended now (it was queued or parked, not leased): tell its parent
  if v_root_status in ('queued', 'awaiting_children', 'awaiting_approval') then
    perform pgflight._step_finished(p_step_id, 'cancelled', session_user::text);
  end if;
  return query select p_step_id, v_c, v_r;
end
$$;
comment on function pgflight.cancel_step(bigint, text, text) is
  'Cancel a step and its subtree; pokes its parent. Errors: ZF003 unknown step.';
grant execute on function pgflight.cancel_step(bigint, text, text) to pgflight_operator;

commit;
