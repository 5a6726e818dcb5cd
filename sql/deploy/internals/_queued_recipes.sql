-- Deploy pgflight:internals/_queued_recipes

begin;

set local role pgflight_owner;

-- The recipes with queued (unparked) work: a skip scan of step_attempts_recipe_ready_idx.
CREATE OR REPLACE FUNCTION pgflight._queued_recipes() RETURNS text[]
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with recursive r(recipe) as (
    (select a.recipe from pgflight.step_attempts a
      where a.status = 'queued' and a.available_after < 'infinity' order by a.recipe limit 1)
    union all
    select (select a.recipe from pgflight.step_attempts a
             where a.status = 'queued' and a.available_after < 'infinity' and a.recipe > r.recipe
             order by a.recipe limit 1)
      from r where r.recipe is not null
  )
  select coalesce(array_agg(r.recipe), '{}') from r where r.recipe is not null
$$;

COMMENT ON FUNCTION pgflight._queued_recipes() IS 'Internal: the recipes that have queued work; one index probe each.';

REVOKE ALL ON FUNCTION pgflight._queued_recipes() FROM PUBLIC;

commit;
