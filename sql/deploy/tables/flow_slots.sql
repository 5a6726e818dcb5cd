-- Deploy pgflight:tables/flow_slots
-- The in-flight caps' counters (issue 15, claim cost). A cap (a workspace's max_in_flight, or the
-- global one in settings) is split into stripes: rows of flow_slots, each with a part of the cap
-- (`cap`) and the attempts leased through it (`held`). A claim locks a stripe with SKIP LOCKED,
-- takes at most cap - held from it (more stripes if it needs more), and commits; so concurrent
-- claimers of one workspace each take a share of the cap instead of one serving it while the
-- others skip it, and a claim never waits on another. Each stripe stays at or under its part, so
-- the sum (the attempts leased under the cap) stays at or under the cap: no overshoot.
--
-- A slot comes back when its attempt leaves the leased set (completed, failed, released to a
-- wait, reclaimed, cancelled, past its deadline), in that same transaction: the trigger
-- step_attempts_return_slots appends a row to flow_slot_returns (an insert: it never waits on a
-- stripe a claimer holds, so it can neither slow the finish nor deadlock with a claim), and the
-- next claim of that scope folds the committed returns into the stripe it holds. An attempt that
-- is not committed as finished still holds its slot. The sweep (wake_parked_keys) reconciles
-- every scope against the attempts table, so a path that bypassed the trigger cannot leak slots.
--
-- step_attempts.slots records what an attempt was counted against (bit 1: the global cap, bit 2:
-- its workspace's cap), so the trigger returns exactly those and attempts leased with no cap set
-- (the default) never fire it.
begin;
set local role pgflight_owner;

create table pgflight.flow_slots (
  scope   bigint   not null,  -- a workspace id, or 0 for the global cap
  stripe  smallint not null,
  cap     integer  not null,  -- this stripe's part of the cap
  held    integer  not null default 0,  -- leased through this stripe, less the returns folded in (may be negative)
  primary key (scope, stripe),
  constraint cap_is_not_negative check (cap >= 0)
) with (fillfactor = 20);
comment on table pgflight.flow_slots is
  'In-flight caps split into stripes: a claim takes at most cap - held from the stripes it can lock '
  'without waiting. scope: workspace id, 0 for the global cap. Reconciled by wake_parked_keys.';

create table pgflight.flow_slot_returns (
  id     bigint generated always as identity primary key,
  scope  bigint  not null,
  n      integer not null default 1
);
create index flow_slot_returns_scope_idx on pgflight.flow_slot_returns (scope);
comment on table pgflight.flow_slot_returns is
  'Slots given back by attempts that left the leased set, not yet folded into a stripe by a claim.';

alter table pgflight.step_attempts add column slots smallint not null default 0;
comment on column pgflight.step_attempts.slots is
  'What this lease is counted against: bit 1 the global cap, bit 2 its workspace''s cap (0: none).';

commit;
