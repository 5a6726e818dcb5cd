-- Deploy pgflight:internals/_cascade_root

begin;

set local role pgflight_owner;

-- The root of the subtree an unsuccessful end of p_step_id may cancel: the topmost ancestor
-- reached through parents that have fail_fast and whose live attempt still waits for its children
-- (awaiting_children: the end can dead-letter it); else the step itself when it has children;
-- else null (nothing but its own attempt). A parent whose attempt already ended (a cascade already
-- ran) is not climbed: the end of each of its other children then costs its own subtree only, not
-- the whole family's again.
CREATE OR REPLACE FUNCTION pgflight._cascade_root(p_step_id bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint := p_step_id;
  v_top bigint;
  v_step record;
begin
  loop
    select s.parent_id into v_id from pgflight.steps s where s.id = v_id;
    exit when v_id is null;
    select s.fail_fast, s.parent_id into v_step from pgflight.steps s where s.id = v_id;
    exit when not coalesce(v_step.fail_fast, false)
           or not exists (select from pgflight.step_attempts a
                           where a.step_id = v_id and a.status = 'awaiting_children');
    v_top := v_id;
  end loop;
  if v_top is null and exists (select from pgflight.steps c where c.parent_id = p_step_id) then
    v_top := p_step_id;
  end if;
  return v_top;
end
$$;

COMMENT ON FUNCTION pgflight._cascade_root(p_step_id bigint) IS 'Internal: root of the subtree an unsuccessful end of this step may cancel (a waiting fail-fast ancestor, else the step when it has children), or null.';

REVOKE ALL ON FUNCTION pgflight._cascade_root(p_step_id bigint) FROM PUBLIC;

commit;
