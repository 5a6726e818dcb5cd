-- Deploy pgflight:functions/set_recipe_limits

begin;

set local role pgflight_owner;

-- Set a recipe's claim rate across all workspaces. options: starts_per_s (claims per second;
-- null removes the limit) and burst (the most claimed at once after a quiet spell, default
-- max(1, starts_per_s)). Returns the limits now in force.
-- Errors: 22023 unknown option, out of range or blank recipe.
CREATE OR REPLACE FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) RETURNS TABLE(recipe text, starts_per_s double precision, burst double precision, paused_at timestamp with time zone, paused_by text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_rate double precision;
  v_burst double precision;
begin
  perform pgflight._require_lane('operator', null, 'set_recipe_limits');  -- acts on every workspace
  perform pgflight._require_known_keys(p_options, array['starts_per_s', 'burst']);
  if p_recipe is null or btrim(p_recipe) = '' or length(p_recipe) > 200 then
    raise exception using errcode = '22023', message = 'recipe is required',
      hint = 'Pass a recipe name of at most 200 characters.';
  end if;
  v_rate := pgflight._limit_option(p_options, 'starts_per_s', 1e-6, 1e6, false);
  v_burst := coalesce(pgflight._limit_option(p_options, 'burst', 1, 1e6, false), greatest(1, v_rate));
  insert into pgflight.recipe_limits as l (recipe, starts_per_s, burst)
  values (p_recipe, v_rate, case when v_rate is not null then v_burst end)
  on conflict on constraint recipe_limits_pkey do update
     set starts_per_s = excluded.starts_per_s, burst = excluded.burst, tokens = null, refilled_at = null,
         updated_at = pgflight._now();
  -- a row with no limit and no pause is removed: the claim then skips the recipe checks entirely
  delete from pgflight.recipe_limits l where l.recipe = p_recipe and l.starts_per_s is null and l.paused_at is null;
  return query
    select p_recipe, l.starts_per_s, l.burst, l.paused_at, l.paused_by
      from (select 1) one left join pgflight.recipe_limits l on l.recipe = p_recipe;
end
$$;

COMMENT ON FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) IS 'Set (or with starts_per_s null, remove) a recipe''s claim rate starts_per_s/burst. Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.set_recipe_limits(p_recipe text, p_options jsonb) TO pgflight_operator;

commit;
