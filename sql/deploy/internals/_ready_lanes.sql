-- Deploy pgflight:internals/_ready_lanes

begin;

set local role pgflight_owner;

-- The workspaces with queued (unparked) work: a skip scan of step_attempts_ws_ready_idx, one
-- probe per workspace. With p_recipes, the (workspace, recipe) pairs instead, through
-- step_attempts_recipe_ready_idx, so a rare recipe's lanes are found without walking the others.
CREATE OR REPLACE FUNCTION pgflight._ready_lanes(p_recipes text[]) RETURNS TABLE(workspace_id bigint, recipe text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if p_recipes is null then
    return query
    with recursive w(id) as (
      (select a.workspace_id from pgflight.step_attempts a
        where a.status = 'queued' and a.available_after < 'infinity'
        order by a.workspace_id limit 1)
      union all
      select (select a.workspace_id from pgflight.step_attempts a
               where a.status = 'queued' and a.available_after < 'infinity' and a.workspace_id > w.id
               order by a.workspace_id limit 1)
        from w where w.id is not null
    )
    select w.id, null::text from w where w.id is not null;
  else
    return query
    with recursive w(recipe, id) as (
      select r.recipe, (select a.workspace_id from pgflight.step_attempts a
                         where a.recipe = r.recipe and a.status = 'queued' and a.available_after < 'infinity'
                         order by a.workspace_id limit 1)
        from (select distinct x as recipe from unnest(p_recipes) x where x is not null) r
      union all
      select w.recipe, (select a.workspace_id from pgflight.step_attempts a
                         where a.recipe = w.recipe and a.status = 'queued' and a.available_after < 'infinity'
                           and a.workspace_id > w.id
                         order by a.workspace_id limit 1)
        from w where w.id is not null
    )
    select w.id, w.recipe from w where w.id is not null;
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._ready_lanes(p_recipes text[]) IS 'Internal: the workspaces (with p_recipes: workspace and recipe pairs) that have queued work; one index probe each.';

REVOKE ALL ON FUNCTION pgflight._ready_lanes(p_recipes text[]) FROM PUBLIC;

commit;
