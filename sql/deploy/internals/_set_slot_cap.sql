-- Deploy pgflight:internals/_set_slot_cap

begin;

set local role pgflight_owner;

-- (Re)build the stripes of a scope (a workspace id, 0: global) for cap p_cap, and reconcile them
-- with the attempts table: the leased attempts of the scope are all counted (marked with the
-- scope's bit), whatever the stripes said. p_cap null: no cap, stripes and marks removed. Two
-- rebuilds of one scope take turns on the engine_locks row 'slots:<scope>' (an advisory key
-- before, which any login could hold: every sweep pass then failed with 55P03). Waits for the
-- claims holding the scope's stripes (they commit in milliseconds); called by
-- set_workspace_limits, set_global_limits and the sweep wake_parked_keys (which bounds the wait
-- and skips the scope when it runs out: lock_not_available, 55P03).
CREATE OR REPLACE FUNCTION pgflight._set_slot_cap(p_scope bigint, p_cap integer) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION pgflight._set_slot_cap(p_scope bigint, p_cap integer) IS 'Internal: (re)build and reconcile the in-flight slot stripes of a workspace (0: global) for a cap (null: none).';

REVOKE ALL ON FUNCTION pgflight._set_slot_cap(p_scope bigint, p_cap integer) FROM PUBLIC;

commit;
