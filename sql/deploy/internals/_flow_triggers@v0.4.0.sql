-- Deploy pgflight:internals/_flow_triggers
-- Defines: _fill_attempt_flow(), _key_lock(), _key_slot_freed(), _return_slots(), _take_slots(),
-- _set_slot_cap().
-- The trigger functions of step_attempts' flow columns (issue 15); the triggers themselves are
-- tables/step_attempts_triggers and tables/flow_slots_triggers; with them the in-flight caps'
-- counters (tables/flow_slots: how and why they are striped). None is granted to any role.
begin;
set local role pgflight_owner;

-- Fills workspace_id and the key of an attempt inserted without them (the retry paths copy
-- nothing but recipe and priority). submit_run and spawn_children pass them, so on the bulk
-- paths the WHEN clause keeps this trigger from running at all.
create or replace function pgflight._fill_attempt_flow()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
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

-- The advisory lock of one (workspace, key): claimers take it exclusively with a try (never
-- wait), the trigger below shares it (waits only for a claimer's commit). A hash collision only
-- makes two keys skip each other now and then.
create or replace function pgflight._key_lock(p_workspace_id bigint, p_key text)
returns bigint
language sql immutable
set search_path = pg_catalog, pg_temp
as $$ select pg_catalog.hashtextextended('pgflight.key:' || p_workspace_id || ':' || p_key, 0) $$;
comment on function pgflight._key_lock(bigint, text) is 'Internal: advisory lock id of a concurrency key.';

-- A keyed attempt left the set that counts against its key (leased, or queued and woken): wake
-- the first parked attempt of the key. The shared lock waits for a claimer that is parking
-- attempts of this key to commit, so a park and a release can never miss each other.
create or replace function pgflight._key_slot_freed()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  -- _key_lock's expression, written out (a function with a SET clause is never inlined)
  perform pg_catalog.pg_advisory_xact_lock_shared(
    pg_catalog.hashtextextended('pgflight.key:' || old.workspace_id || ':' || old.concurrency_key, 0));
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

-- Take up to p_want slots of a capped scope (a workspace id, 0: global) for this transaction:
-- lock stripes without waiting (SKIP LOCKED), starting at one chosen by the backend so that
-- concurrent claimers start apart, fold the committed returns into the first stripe locked, and
-- take from each at most its cap - held. Returns the slots taken and the first stripe locked (to
-- give unused slots back to, under the lock this transaction holds); (0, null) when every stripe
-- is held by another claimer right now or the cap is full. Never waits.
create or replace function pgflight._take_slots(p_scope bigint, p_want integer, out got integer, out stripe smallint)
language plpgsql volatile
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
  v_start integer := pg_catalog.pg_backend_pid() % 64;
  v_tried smallint[] := '{}';
  v_stripe smallint;
  v_free integer;
  v_take integer;
begin
  got := 0;
  while got < p_want loop
    select s.stripe, s.cap - s.held into v_stripe, v_free
      from pgflight.flow_slots s
     where s.scope = p_scope and s.stripe <> all (v_tried)
     order by (s.stripe - v_start + 64) % 64
     limit 1
       for update skip locked;
    exit when not found;
    v_tried := v_tried || v_stripe;
    if stripe is null then
      stripe := v_stripe;
      -- the committed returns of this scope (a return not yet committed is still a held slot)
      with r as (
        delete from pgflight.flow_slot_returns f
         where f.id in (select g.id from pgflight.flow_slot_returns g where g.scope = p_scope
                         limit 10000 for update skip locked)
        returning f.n)
      update pgflight.flow_slots s set held = s.held - (select coalesce(sum(r.n), 0) from r)::integer
       where s.scope = p_scope and s.stripe = v_stripe
      returning s.cap - s.held into v_free;
    end if;
    if v_free > 0 then
      v_take := least(v_free, p_want - got);
      update pgflight.flow_slots s set held = s.held + v_take where s.scope = p_scope and s.stripe = v_stripe;
      got := got + v_take;
    end if;
  end loop;
end
$$;
comment on function pgflight._take_slots(bigint, integer) is
  'Internal: take up to p_want in-flight slots of a capped scope from the stripes free right now.';

-- (Re)build the stripes of a scope (a workspace id, 0: global) for cap p_cap, and reconcile them
-- with the attempts table: the leased attempts of the scope are all counted (marked with the
-- scope's bit), whatever the stripes said. p_cap null: no cap, stripes and marks removed. Waits
-- for the claims holding the scope's stripes (they commit in milliseconds); called by
-- set_workspace_limits, set_global_limits and the sweep wake_parked_keys.
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
  perform pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('pgflight.slots:' || p_scope, 0));
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
