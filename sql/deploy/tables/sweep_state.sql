-- Deploy pgflight:tables/sweep_state
-- requires: schema
-- One row: when the last sweep pass ended (engine_health's sweep lag) and how large the next
-- reclaim batch is (run_sweeps doubles it while a pass finds a full batch of lapsed leases, up to
-- its cap, and drops it back to 1,000 when the backlog is gone; the cap is 1,000 for now). Written once per pass (every few
-- seconds): a HOT update of one narrow row, so it costs nothing that could matter.
begin;
set local role pgflight_owner;

create table pgflight.sweep_state (
  id                 boolean primary key default true,
  last_pass_at       timestamptz,
  last_partitions_at timestamptz,
  reclaim_batch      integer not null default 1000,
  constraint one_row check (id),
  constraint reclaim_batch_is_positive check (reclaim_batch > 0)
) with (fillfactor = 50);
insert into pgflight.sweep_state default values;
comment on table pgflight.sweep_state is
  'The sweeps'' own state, one row: last_pass_at (end of the last run_sweeps), last_partitions_at (last '
  'maintain_partitions), reclaim_batch (the reclaim limit of the next pass, grown while a backlog lasts).';

commit;
