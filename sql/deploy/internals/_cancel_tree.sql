-- Deploy pgflight:internals/_cancel_tree

begin;

set local role pgflight_owner;

-- Cancel a whole tree until nothing live is left in it: every step of run p_run_id when
-- p_step_id is null, else p_step_id and all its descendants. A write this cancel waited for (a
-- retry, a reclaim, a spawn) may have created attempts or children its pass could not see, so
-- the tree is read anew after each pass, and the loop ends when a fresh read finds nothing live.
-- Nothing can create one after that: every attempt that could is cancelled or cancel_requested
-- and refuses fenced writes. Shared by cancel_run, cancel_step and _step_finished.
CREATE OR REPLACE FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) RETURNS TABLE(cancelled integer, cancel_requested integer)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ids bigint[];
  v_pass_c integer;
  v_pass_r integer;
begin
  cancelled := 0;
  cancel_requested := 0;
  loop
    v_ids := pgflight._tree_steps(p_run_id, p_step_id);
    select c.cancelled, c.cancel_requested into v_pass_c, v_pass_r
      from pgflight._cancel_steps(v_ids, p_actor, p_reason) c;
    cancelled := cancelled + v_pass_c;
    cancel_requested := cancel_requested + v_pass_r;
    exit when not exists (
      select from unnest(pgflight._tree_steps(p_run_id, p_step_id)) as t(id)
        join pgflight.step_attempts a on a.step_id = t.id
       where a.status in ('queued', 'claimed', 'running', 'awaiting_children', 'awaiting_approval'));
  end loop;
  return next;
end
$$;

COMMENT ON FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) IS 'Internal: cancel every live attempt of a run (p_step_id null) or of a subtree, until none is left.';

REVOKE ALL ON FUNCTION pgflight._cancel_tree(p_run_id bigint, p_step_id bigint, p_actor text, p_reason text) FROM PUBLIC;

commit;
