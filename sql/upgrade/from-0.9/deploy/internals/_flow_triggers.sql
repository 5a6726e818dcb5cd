-- Deploy pgflight:internals/_flow_triggers
-- Defines: _fill_attempt_flow(), _key_slot_freed(), _return_slots(), _take_slots_all(),
-- _give_slots_back(), _set_slot_cap().
-- The trigger functions of step_attempts' flow columns (issue 15); the triggers themselves are
-- tables/step_attempts_triggers and tables/flow_slots_triggers; with them the in-flight caps'
-- counters (tables/flow_slots: how and why they are striped). None is granted to any role.
begin;
set local role pgflight_owner;

-- Fills workspace_id and the key of an attempt inserted without them (the retry paths copy
-- nothing but recipe and priority). submit_run and spawn_children pass them, so on the bulk
-- paths the WHEN clause keeps this trigger from running at all.
-- enable_seqscan off (issue 18): both lookups are by primary key, and the plans are cached for
-- the session. A bulk INSERT of attempts without workspace_id (by hand, or a loader) into tables
-- analyzed while empty (autovacuum after a TRUNCATE) planned them while runs and steps held one
-- page: a seq scan, kept for every later row while the tables grew, quadratic (a second load of
-- 1,000,000 crashed runs ran over 18 minutes where the first took 92 s).
create or replace function pgflight._fill_attempt_flow()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
set enable_seqscan = off
as $$
begin
  select r.workspace_id into new.workspace_id from pgflight.runs r where r.id = new.run_id;
  select s.concurrency_key, s.concurrency_limit into new.concurrency_key, new.concurrency_limit
    from pgflight.steps s where s.id = new.step_id;
  return new;
end
$$;
comment on function pgflight._fill_attempt_flow() is
  'Internal trigger: copy workspace_id and the concurrency key onto an attempt inserted without them.';

-- A concurrency key's lock is the engine_locks row 'key:<workspace id>:<key>' (tables/engine_locks):
-- claimers and the sweep take it FOR UPDATE SKIP LOCKED (never wait), the trigger below FOR SHARE
-- (waits only for a claimer's commit). It was an advisory lock on a key any login could compute
-- and hold: a reader holding it made every keyed completion of that key wait until its
-- statement_timeout. No login can lock the row.
drop function if exists pgflight._key_lock(bigint, text);

-- A keyed attempt left the set that counts against its key (leased, or queued and woken): wake
-- the first parked attempt of the key. The shared row lock waits for a claimer that is parking
-- attempts of this key to commit, so a park and a release can never miss each other (the row is
-- created first if missing: a claimer that created it and has not committed is waited for by
-- the insert). Only engine functions lock these rows, each for a statement or a short claim.
create or replace function pgflight._key_slot_freed()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_scope text := 'key:' || old.workspace_id || ':' || old.concurrency_key;
begin
  insert into pgflight.engine_locks (scope) values (v_scope) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = v_scope for share;
  update pgflight.step_attempts a set available_after = pgflight._now()
   where a.id = (select p.id from pgflight.step_attempts p
                  where p.workspace_id = old.workspace_id and p.concurrency_key = old.concurrency_key
                    and p.status = 'queued' and p.available_after = 'infinity'
                  order by p.priority desc, p.id
                  limit 1
                    for update skip locked);
  return null;
end
$$;
comment on function pgflight._key_slot_freed() is
  'Internal trigger: a keyed attempt stopped holding or waiting for a slot; wake one parked attempt of its key.';

-- A leased attempt counted against a cap (slots <> 0) leaves the leased set: append one return
-- per cap it held, in the same transaction (an insert: never waits on a stripe a claimer holds),
-- and clear its bits so no later change returns them twice. A BEFORE trigger, so the clearing is
-- part of the same row version.
create or replace function pgflight._return_slots()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  insert into pgflight.flow_slot_returns (scope)
  select x.scope from (values (1, 0::bigint), (2, old.workspace_id)) x(bit, scope)
   where old.slots & x.bit <> 0;
  new.slots := 0;
  return new;
end
$$;
comment on function pgflight._return_slots() is
  'Internal trigger: a leased attempt counted against caps stopped being leased; return its slots.';

-- _take_slots(scope, want), one scope per call, gave way to _take_slots_all (issue 15/18 claim cost)
drop function if exists pgflight._take_slots(bigint, integer);

-- Take in-flight slots of several capped scopes at once (a claim's capped workspaces and the
-- global cap, 0; each scope once): up to p_wants[i] of scope p_scopes[i] (stripes locked
-- without waiting, from one chosen by the backend; the committed returns of a scope folded into
-- the first stripe locked; at most cap - held from each), but one statement for every scope: each
-- scope locks one stripe, folds and takes. Only a scope whose stripe had too little goes on to
-- its next stripe, in a further statement for all such scopes (at most 7 more, as a scope has at
-- most 8 stripes). Issue 15/18: a claim of four capped workspaces and the global cap made five
-- _take_slots calls of three statements each. Returns, per scope asked for, the slots taken and
-- the first stripe locked (null when none could be locked), to give unused slots back to with
-- _give_slots_back under the lock this transaction holds. Never waits.
create or replace function pgflight._take_slots_all(p_scopes bigint[], p_wants integer[])
returns table (scope bigint, got integer, stripe smallint)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
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
comment on function pgflight._take_slots_all(bigint[], integer[]) is
  'Internal: take in-flight slots of several capped scopes at once (p_wants[i] of p_scopes[i]) from the stripes free right now.';

-- Give back slots taken and not used (by _take_slots_all) to the stripe each scope locked first
-- (this transaction holds its lock): one statement for every scope; nothing for zero.
create or replace function pgflight._give_slots_back(p_scopes bigint[], p_stripes smallint[], p_counts integer[])
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
begin
  -- PL/pgSQL: its plan is cached across calls (a SQL function with a SET clause is planned each time)
  update pgflight.flow_slots s set held = s.held - u.n
    from unnest(p_scopes, p_stripes, p_counts) u(scope, stripe, n)
   where s.scope = u.scope and s.stripe = u.stripe and u.n > 0;
end
$$;
comment on function pgflight._give_slots_back(bigint[], smallint[], integer[]) is
  'Internal: give unused in-flight slots back to the stripes a claim locked (per scope: stripe, count).';

-- (Re)build the stripes of a scope (a workspace id, 0: global) for cap p_cap, and reconcile them
-- with the attempts table: the leased attempts of the scope are all counted (marked with the
-- scope's bit), whatever the stripes said. p_cap null: no cap, stripes and marks removed. Two
-- rebuilds of one scope take turns on the engine_locks row 'slots:<scope>' (an advisory key
-- before, which any login could hold: every sweep pass then failed with 55P03). Waits for the
-- claims holding the scope's stripes (they commit in milliseconds); called by
-- set_workspace_limits, set_global_limits and the sweep wake_parked_keys (which bounds the wait
-- and skips the scope when it runs out: lock_not_available, 55P03).
create or replace function pgflight._set_slot_cap(p_scope bigint, p_cap integer)
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_bit smallint := case when p_scope = 0 then 1 else 2 end;
  v_held integer;
  v_stripes integer;
begin
  insert into pgflight.engine_locks (scope) values ('slots:' || p_scope) on conflict do nothing;
  perform from pgflight.engine_locks l where l.scope = 'slots:' || p_scope for update;
  perform from pgflight.flow_slots s where s.scope = p_scope for update;
  if p_cap is null then
    delete from pgflight.flow_slots s where s.scope = p_scope;
    delete from pgflight.flow_slot_returns f where f.scope = p_scope;
    update pgflight.step_attempts a set slots = a.slots & ~v_bit
     where a.status in ('claimed', 'running', 'cancel_requested') and a.slots & v_bit <> 0
       and (p_scope = 0 or a.workspace_id = p_scope);
    return;
  end if;
  -- one statement, one snapshot: the returns it drops and the attempts it counts agree (a
  -- finish committed after it started is neither counted nor dropped; its return is folded later)
  with marked as (
    update pgflight.step_attempts a set slots = a.slots | v_bit
     where a.status in ('claimed', 'running', 'cancel_requested') and a.slots & v_bit = 0
       and (p_scope = 0 or a.workspace_id = p_scope)
    returning 1
  ), dropped as (
    delete from pgflight.flow_slot_returns f where f.scope = p_scope returning 1
  )
  select (select count(*) from marked)
         + (select count(*) from pgflight.step_attempts a
             where a.status in ('claimed', 'running', 'cancel_requested') and a.slots & v_bit <> 0
               and (p_scope = 0 or a.workspace_id = p_scope))
    into v_held;  -- (a data-modifying CTE runs whether read or not: `dropped` is done)
  -- up to eight stripes (fewer under a small cap), the cap split evenly; the held slots fill
  -- stripes in order, any excess over the cap stays on the first (nothing is taken until it drains)
  v_stripes := least(8, greatest(p_cap, 1));
  delete from pgflight.flow_slots s where s.scope = p_scope;
  insert into pgflight.flow_slots (scope, stripe, cap, held)
  select p_scope, i, c.cap,
         case when i = 0 then greatest(least(c.cap, v_held), v_held - (p_cap - c.cap))
              else least(c.cap, greatest(0, v_held - c.before)) end
    from generate_series(0, v_stripes - 1) i,
         lateral (select p_cap / v_stripes + (i < p_cap % v_stripes)::integer as cap,
                         i * (p_cap / v_stripes) + least(i, p_cap % v_stripes) as before) c;
end
$$;
comment on function pgflight._set_slot_cap(bigint, integer) is
  'Internal: (re)build and reconcile the in-flight slot stripes of a workspace (0: global) for a cap (null: none).';

commit;
