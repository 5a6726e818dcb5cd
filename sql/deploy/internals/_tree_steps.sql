-- Deploy pgflight:internals/_tree_steps

begin;

set local role pgflight_owner;

-- The steps of a run (p_step_id null), or of the subtree rooted at p_step_id: one indexed read.
CREATE OR REPLACE FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) RETURNS bigint[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when p_step_id is null
    then (select array_agg(s.id) from pgflight.steps s where s.run_id = p_run_id)
    else (with recursive sub as (
            select p_step_id as id
            union all
            select c.id from pgflight.steps c join sub on c.parent_id = sub.id
          ) select array_agg(sub.id) from sub)
  end
$$;

COMMENT ON FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) IS 'Internal: ids of a run''s steps, or of a step and its descendants.';

REVOKE ALL ON FUNCTION pgflight._tree_steps(p_run_id bigint, p_step_id bigint) FROM PUBLIC;

commit;
