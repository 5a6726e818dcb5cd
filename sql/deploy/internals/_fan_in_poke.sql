-- Deploy pgflight:internals/_fan_in_poke

begin;

set local role pgflight_owner;

-- The parent pokes of _steps_finished (step 2): for each parent of the steps that ended (id
-- order), take their count from its stripes; then lock, in id order, the parents whose row must
-- change (a stripe ran dry, an unstriped count, a child that ended unsuccessfully: fail-fast reads
-- the row) and decrement their children_pending. Returns those parents with their counter after
-- the decrement: zero means every child has ended (wake it, once). A parent at zero loses its
-- stripes (all dry).
CREATE OR REPLACE FUNCTION pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[]) RETURNS TABLE(id bigint, children_pending integer, fail_fast boolean, failed boolean)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_f record;
  v_take record;
  v_ids bigint[] := '{}';
  v_decs integer[] := '{}';
  v_failed boolean[] := '{}';
  v_left integer[];
  v_fail_fast boolean[];
begin
  -- the ended steps read by primary key in a CTE of their own: joined directly, the planner may
  -- start from the index of children (parent_id not null) and read every child of a fan-out
  for v_f in
    with ended as materialized (
      select s.id, s.parent_id from pgflight.steps s where s.id = any (p_step_ids)
    )
    select e.parent_id, count(*)::integer as n, bool_or(f.final <> 'succeeded') as failed
      from unnest(p_step_ids, p_finals) as f(id, final) join ended e on e.id = f.id
     where e.parent_id is not null
     group by e.parent_id
     order by e.parent_id
  loop
    select t.dry, t.rest into v_take from pgflight._fan_in_take(v_f.parent_id, v_f.n) t;
    if v_take.dry + v_take.rest > 0 or v_f.failed then
      v_ids := v_ids || v_f.parent_id;
      v_decs := v_decs || (v_take.dry + v_take.rest);
      v_failed := v_failed || v_f.failed;
    end if;
  end loop;
  if cardinality(v_ids) = 0 then
    return;
  end if;
  -- lock the parents (id order) in a statement of their own, then decrement
  perform from pgflight.steps p where p.id = any (v_ids) order by p.id for update of p;
  with poked as (
    update pgflight.steps p
       set children_pending = greatest(p.children_pending - d.dec, 0)
      from unnest(v_ids, v_decs, v_failed) as d(id, dec, failed)
     where p.id = d.id
    returning p.id, p.children_pending, p.fail_fast, d.failed
  )
  select array_agg(k.id order by k.id), array_agg(k.children_pending order by k.id),
         array_agg(k.fail_fast order by k.id), array_agg(k.failed order by k.id)
    into v_ids, v_left, v_fail_fast, v_failed
    from poked k;
  delete from pgflight.fan_in_stripes f
   where f.parent_id in (select d.id from unnest(v_ids, v_left) as d(id, n) where d.n = 0);
  return query select * from unnest(v_ids, v_left, v_fail_fast, v_failed);
end
$$;

COMMENT ON FUNCTION pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[]) IS 'Internal: the parent pokes of ended steps through the striped counter; returns the parents whose row changed, with children_pending after (0: wake), fail_fast and whether a child failed.';

REVOKE ALL ON FUNCTION pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[]) FROM PUBLIC;

commit;
