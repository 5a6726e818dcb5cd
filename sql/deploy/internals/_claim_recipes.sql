-- Deploy pgflight:internals/_claim_recipes

begin;

set local role pgflight_owner;

-- The recipes a fair claim may take, when any recipe is paused or rate-limited (_claim_fair's
-- first section; it calls this only while pgflight.recipe_limits has rows). p_recipes: the
-- recipes the claim named (null: every recipe with queued work, _queued_recipes). Returns them
-- without the paused ones, so paused work is never walked past; each rate-limited one is kept
-- only when this call holds its bucket (its recipe_limits row, locked FOR UPDATE SKIP LOCKED in
-- recipe order: a bucket another claimer holds right now is left to that claimer), refilled to
-- p_now and written back; rated and rated_left name those recipes and the whole starts each may
-- take (the claim charges what it took before it commits). Never waits on a lock.
CREATE OR REPLACE FUNCTION pgflight._claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_rl record;
  v_tokens double precision;
begin
  recipes := coalesce(p_recipes, pgflight._queued_recipes());
  rated := '{}';
  rated_left := '{}';
  recipes := array(select r from unnest(recipes) r
                    where not exists (select from pgflight.recipe_limits l
                                       where l.recipe = r and l.paused_at is not null));
  for v_rl in
    select l.recipe, l.starts_per_s, l.burst, l.tokens, l.refilled_at from pgflight.recipe_limits l
     where l.recipe = any (recipes) and l.starts_per_s is not null
     order by l.recipe
       for update skip locked
  loop
    v_tokens := pgflight._bucket_tokens(v_rl.tokens, v_rl.refilled_at, v_rl.starts_per_s, v_rl.burst, p_now);
    update pgflight.recipe_limits l set tokens = v_tokens, refilled_at = p_now where l.recipe = v_rl.recipe;
    rated := rated || v_rl.recipe;
    rated_left := rated_left || floor(v_tokens)::integer;
  end loop;
  -- a rate-limited recipe whose bucket another claimer holds right now is left to that claimer
  recipes := array(select r from unnest(recipes) r
                    where r = any (rated)
                       or not exists (select from pgflight.recipe_limits l
                                       where l.recipe = r and l.starts_per_s is not null));
end
$$;

COMMENT ON FUNCTION pgflight._claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]) IS 'Internal (_claim_fair): the recipes a claim may take, without the paused ones and the rate-limited ones whose bucket another claimer holds; rated/rated_left: the rate-limited recipes this call holds and the starts each may take (buckets refilled to p_now).';

REVOKE ALL ON FUNCTION pgflight._claim_recipes(p_recipes text[], p_now timestamp with time zone, OUT recipes text[], OUT rated text[], OUT rated_left integer[]) FROM PUBLIC;

commit;
