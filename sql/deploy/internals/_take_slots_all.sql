-- Deploy pgflight:internals/_take_slots_all

begin;

set local role pgflight_owner;

-- Take in-flight slots of several capped scopes at once (a claim's capped workspaces and the
-- global cap, 0; each scope once): up to p_wants[i] of scope p_scopes[i] (stripes locked
-- without waiting, from one chosen by the backend; the committed returns of a scope folded into
-- the first stripe locked; at most cap - held from each), but one statement for every scope: each
-- scope locks one stripe, folds and takes. Only a scope whose stripe had too little goes on to
-- its next stripe, in a further statement for all such scopes (at most 7 more, as a scope has at
-- most 8 stripes). A claim of four capped workspaces and the global cap made five
-- _take_slots calls of three statements each. Returns, per scope asked for, the slots taken and
-- the first stripe locked (null when none could be locked), to give unused slots back to with
-- _give_slots_back under the lock this transaction holds. Never waits.
CREATE OR REPLACE FUNCTION pgflight._take_slots_all(p_scopes bigint[], p_wants integer[]) RETURNS TABLE(scope bigint, got integer, stripe smallint)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
declare
  v_start integer := pg_catalog.pg_backend_pid() % 64;
  v_n integer := cardinality(p_scopes);
  v_got integer[];
  v_first smallint[];
  v_tried bigint[] := '{}';  -- scope * 64 + stripe of every stripe locked
  v_short bigint[] := '{}';
  v_short_want integer[] := '{}';
  v_locked_now bigint[];
  v_round integer := 0;
  v_s bigint;
  v_t integer;
  v_st smallint;
  v_i integer;
begin
  -- (array bookkeeping in PL/pgSQL's simple expressions, not SQL: each SQL expression run here
  -- costs tens of microseconds, a simple one about one)
  v_got := array_fill(0, array[v_n]);
  v_first := array_fill(null::smallint, array[v_n]);
  for v_i in 1 .. v_n loop
    if p_wants[v_i] > 0 then
      v_short := v_short || p_scopes[v_i];
      v_short_want := v_short_want || p_wants[v_i];
    end if;
  end loop;
  while v_short <> '{}' and v_round < 8 loop
    v_round := v_round + 1;
    v_locked_now := '{}';
    for v_s, v_st, v_t in
      with locked as materialized (
        -- the next stripe of each scope still short, skipping stripes other claimers hold
        select l.scope, l.stripe, l.cap, l.held, w.want
          from unnest(v_short, v_short_want) w(scope, want)
          cross join lateral (
            select s.scope, s.stripe, s.cap, s.held from pgflight.flow_slots s
             where s.scope = w.scope and (s.scope * 64 + s.stripe) <> all (v_tried)
             order by (s.stripe - v_start + 64) % 64
             limit 1
               for update skip locked) l
      ), returned as (
        -- the committed returns of the scopes whose first stripe this is (a return not yet
        -- committed is still a held slot)
        delete from pgflight.flow_slot_returns f
         where v_round = 1
           and f.id in (select g.id from pgflight.flow_slot_returns g
                         where g.scope in (select l.scope from locked l)
                         limit 10000 for update skip locked)
        returning f.scope, f.n
      ), took as (
        select l.scope, l.stripe, coalesce(r.n, 0) as folded,
               least(greatest(l.cap - l.held + coalesce(r.n, 0), 0), l.want) as take
          from locked l
          left join (select r.scope, sum(r.n)::integer as n from returned r group by r.scope) r on r.scope = l.scope
      ), moved as (
        update pgflight.flow_slots s set held = s.held - t.folded + t.take
          from took t
         where s.scope = t.scope and s.stripe = t.stripe and (t.folded <> 0 or t.take <> 0)
      )
      select t.scope, t.stripe, t.take from took t
    loop
      v_tried := v_tried || (v_s * 64 + v_st);
      v_locked_now := v_locked_now || v_s;
      v_i := array_position(p_scopes, v_s);
      v_got[v_i] := v_got[v_i] + v_t;
      v_first[v_i] := coalesce(v_first[v_i], v_st);
    end loop;
    -- the scopes still short that locked a stripe this round go on to their next stripe; those
    -- that could lock none have no stripe free right now
    v_short := '{}';
    v_short_want := '{}';
    for v_i in 1 .. v_n loop
      if v_got[v_i] < p_wants[v_i] and p_scopes[v_i] = any (v_locked_now) then
        v_short := v_short || p_scopes[v_i];
        v_short_want := v_short_want || (p_wants[v_i] - v_got[v_i]);
      end if;
    end loop;
  end loop;
  for v_i in 1 .. v_n loop
    scope := p_scopes[v_i];
    got := v_got[v_i];
    stripe := v_first[v_i];
    return next;
  end loop;
end
$$;

COMMENT ON FUNCTION pgflight._take_slots_all(p_scopes bigint[], p_wants integer[]) IS 'Internal: take in-flight slots of several capped scopes at once (p_wants[i] of p_scopes[i]) from the stripes free right now.';

REVOKE ALL ON FUNCTION pgflight._take_slots_all(p_scopes bigint[], p_wants integer[]) FROM PUBLIC;

commit;
