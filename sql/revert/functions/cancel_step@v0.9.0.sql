-- Revert pgflight:functions/cancel_step@v0.9.0: restores the previous definition, deploy/functions/cancel_step@v0.2.0.sql (written by scripts/gen_sql_scripts.py)
begin;
set local role pgflight_owner;

-- Cancel one step and its whole subtree. The parent of the subtree is poked once the subtree
-- root is terminal, so a parent waiting on it wakes. Cancelling the root step cancels the run.
-- Errors: ZF003 unknown step.
create or replace function pgflight.cancel_step(p_step_id bigint, p_actor text default null, p_reason text default null)
returns table (step_id bigint, cancelled integer, cancel_requested integer)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_step record;
  v_c integer;
  v_r integer;
  v_root_status text;
begin
  select s.id, s.run_id, s.parent_id into v_step from pgflight.steps s where s.id = p_step_id;
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
  end if;
  if v_step.parent_id is null then
    return query select p_step_id, c.cancelled, c.cancel_requested
      from pgflight.cancel_run(v_step.run_id, p_actor, p_reason) c;
    return;
  end if;
  select a.status into v_root_status from pgflight.step_attempts a
   where a.step_id = p_step_id
     and a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval');
  select t.cancelled, t.cancel_requested into v_c, v_r
    from pgflight._cancel_tree(v_step.run_id, p_step_id, coalesce(p_actor, session_user::text), p_reason) t;
  -- the subtree root ended now (it was queued or parked, not leased): tell its parent
  if v_root_status in ('queued', 'awaiting_children', 'awaiting_approval') then
    perform pgflight._step_finished(p_step_id, 'cancelled', coalesce(p_actor, session_user::text));
  end if;
  return query select p_step_id, v_c, v_r;
end
$$;
comment on function pgflight.cancel_step(bigint, text, text) is
  'Cancel a step and its subtree; pokes its parent. Errors: ZF003 unknown step.';
grant execute on function pgflight.cancel_step(bigint, text, text) to pgflight_operator;

commit;
