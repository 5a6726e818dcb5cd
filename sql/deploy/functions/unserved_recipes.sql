-- Deploy pgflight:functions/unserved_recipes

begin;

set local role pgflight_owner;

-- Read: the recipes among p_recipes (at most 1000 names; nulls ignored) that no live worker serves,
-- sorted, each once. A worker is live when it is not stopped and was seen in the last 60 seconds
-- (engine_health's window); it serves the recipes it registered (all of them when it registered
-- none). Tenancy: a login that may read only some workspaces counts only the workers whose login
-- has a worker lane on one of them (or on every workspace), so it learns nothing of another
-- tenant's workers; it never learns which worker serves a name. Errors: 22023 a NULL or too long
-- array.
CREATE OR REPLACE FUNCTION pgflight.unserved_recipes(p_recipes text[]) RETURNS TABLE(recipe text)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_now timestamptz := pgflight._now();
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  if p_recipes is null or cardinality(p_recipes) > 1000 then
    raise exception using errcode = '22023', message = 'unserved_recipes refused: between 0 and 1000 recipe names',
      detail = format('got %s', coalesce(cardinality(p_recipes)::text || ' names', 'null')),
      hint = 'Ask for the recipes of one submission at a time.';
  end if;
  return query
  select distinct n.name
    from unnest(p_recipes) n(name)
   where n.name is not null
     and not exists (select from pgflight.workers w
                      where w.stopped_at is null and w.last_seen_at > v_now - interval '60 seconds'
                        and (w.recipes is null or n.name = any(w.recipes))
                        and (v_lanes is null or exists (
                              select from pgflight.workspace_grants g
                               where g.login = w.login and g.lane = 'worker'
                                 and (g.workspace_id is null or g.workspace_id = any(v_lanes)))))
   order by 1;
end
$$;

COMMENT ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) IS 'Read: the recipes among p_recipes (0..1000 names) no live worker (seen in the last 60 s) serves, sorted. Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.unserved_recipes(p_recipes text[]) TO pgflight_operator;

commit;
