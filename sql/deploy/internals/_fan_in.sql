-- Deploy pgflight:internals/_fan_in
-- requires: tables/fan_in_stripes
-- requires: tables/steps
-- Defines: _fan_in_stripe(), _fan_in_take(), _fan_in_poke(), _fan_in_clear().
-- The striped fan-in counter (issue 18). Before it, every child's end decremented its parent's
-- steps.children_pending under the parent's row lock, held to commit, so the completions of one
-- parent's children ran one transaction at a time (claim + complete 2.3x slower than for
-- independent steps at 100,000 children).
--
-- How it counts. A fan-out of at least _fan_in_stripe's threshold spreads its children's count
-- over stripe rows (pgflight.fan_in_stripes: pending of allotted). The stripes are pools, not
-- owners: a child that ends takes one from any stripe with some left. The parent's
-- children_pending counts the whole allotment of every stripe not yet dry, plus the children
-- counted on no stripe (a small fan-out, a retried child of a parked parent: _reopen_step adds
-- one there). A completion takes its children's count from a stripe it locks; only the
-- transaction that takes a stripe's last one (the stripe runs dry) decrements the parent's row,
-- by the stripe's allotment, under the parent's row lock. A stripe runs dry once, so the parent's
-- row is decremented once per stripe and reaches zero once, in the transaction that dries the
-- last stripe (C17: exactly one wake). The parent's counter is therefore an upper bound of its
-- pending children, exact at zero and at every stripe boundary.
--
-- How it locks (docs/locking.md). A transaction first tries one stripe with enough left that no
-- one holds (SKIP LOCKED, starting at a stripe chosen by its backend so concurrent workers spread
-- over the stripes): it never waits there. Only when no free stripe has enough left (near the end
-- of a fan-in) does it wait, for every stripe with some left, in stripe order, taking what it
-- needs. Waits on stripes are therefore always in (parent id, stripe) order, the parents of a
-- batch taken in id order; the parent rows come after every stripe, in id order; nobody waits for
-- a stripe while holding a parent's row. So completions cannot deadlock among themselves.
begin;
set local role pgflight_owner;

-- Spread p_created new children of p_parent over stripes (spawn_children, holding the parent's
-- row): 16 stripes of at least 64 children each, fewer for a smaller fan-out, none under 128
-- children (its count stays on the parent's row, as before). The parent's children_pending grows
-- by p_created either way (the caller's update). Returns how many stripes were laid.
create or replace function pgflight._fan_in_stripe(p_parent bigint, p_created integer)
returns integer
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_stripes integer := least(16, p_created / 64);
begin
  if v_stripes < 2
     or exists (select from pgflight.fan_in_stripes f where f.parent_id = p_parent and f.pending > 0) then
    return 0;
  end if;
  delete from pgflight.fan_in_stripes f where f.parent_id = p_parent;  -- dry ones of an earlier fan-out
  insert into pgflight.fan_in_stripes (parent_id, stripe, pending, allotted)
  select p_parent, g.s, n.share, n.share
    from generate_series(0, v_stripes - 1) as g(s)
   cross join lateral (select (p_created / v_stripes + case when g.s < p_created % v_stripes then 1 else 0 end)::integer
                         as share) n;
  return v_stripes;
end
$$;
comment on function pgflight._fan_in_stripe(bigint, integer) is
  'Internal: lay the counter stripes of a fan-out of p_created children; returns how many (0: unstriped).';

-- Take p_n ended children from p_parent's stripes. dry: the allotments of the stripes this call
-- ran dry (to take from the parent's row); rest: what no stripe had left (counted on the parent's
-- row: an unstriped parent, a retried child). Lock order at the head of this file.
create or replace function pgflight._fan_in_take(p_parent bigint, p_n integer, out dry integer, out rest integer)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_home integer := pg_backend_pid() % 16;
  v_row record;
  v_take integer;
begin
  dry := 0;
  rest := p_n;
  -- one free stripe with enough left, never waiting
  select f.stripe, f.pending, f.allotted into v_row
    from pgflight.fan_in_stripes f
   where f.parent_id = p_parent and f.pending >= p_n
   order by f.stripe < v_home, f.stripe
   limit 1
     for update skip locked;
  if found then
    update pgflight.fan_in_stripes f set pending = f.pending - p_n
     where f.parent_id = p_parent and f.stripe = v_row.stripe;
    dry := case when v_row.pending = p_n then v_row.allotted else 0 end;
    rest := 0;
    return;
  end if;
  -- the end of a fan-in: wait for each stripe with some left, in stripe order, until taken
  for v_row in
    select f.stripe, f.pending, f.allotted
      from pgflight.fan_in_stripes f
     where f.parent_id = p_parent and f.pending > 0
     order by f.stripe
       for update
  loop
    v_take := least(v_row.pending, rest);
    update pgflight.fan_in_stripes f set pending = f.pending - v_take
     where f.parent_id = p_parent and f.stripe = v_row.stripe;
    if v_take = v_row.pending then
      dry := dry + v_row.allotted;
    end if;
    rest := rest - v_take;
    exit when rest = 0;
  end loop;
end
$$;
comment on function pgflight._fan_in_take(bigint, integer) is
  'Internal: take ended children from a parent''s counter stripes; dry = allotments of the stripes run '
  'dry, rest = what no stripe held.';

-- The parent pokes of _steps_finished (step 2): for each parent of the steps that ended (id
-- order), take their count from its stripes; then lock, in id order, the parents whose row must
-- change (a stripe ran dry, an unstriped count, a child that ended unsuccessfully: fail-fast reads
-- the row) and decrement their children_pending. Returns those parents with their counter after
-- the decrement: zero means every child has ended (wake it, once). A parent at zero loses its
-- stripes (all dry).
create or replace function pgflight._fan_in_poke(p_step_ids bigint[], p_finals text[])
returns table (id bigint, children_pending integer, fail_fast boolean, failed boolean)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
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
comment on function pgflight._fan_in_poke(bigint[], text[]) is
  'Internal: the parent pokes of ended steps through the striped counter; returns the parents whose row '
  'changed, with children_pending after (0: wake), fail_fast and whether a child failed.';

-- A parent that ended (its children cancelled by _cancel_tree first): its counter and stripes go.
create or replace function pgflight._fan_in_clear(p_parent bigint)
returns void
language sql volatile
set search_path = pg_catalog, pg_temp
as $$
  delete from pgflight.fan_in_stripes f where f.parent_id = p_parent;
  update pgflight.steps set children_pending = 0 where id = p_parent;
$$;
comment on function pgflight._fan_in_clear(bigint) is
  'Internal: zero the fan-in counter of a parent that ended, stripes included.';

commit;
