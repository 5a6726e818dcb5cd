-- Deploy pgflight:tables/flow_slots_triggers
-- An attempt counted against an in-flight cap returns its slots when it leaves the leased set,
-- whichever path moves it (complete, fail, release, reclaim, cancel, deadline): one trigger on
-- the status change, in the same transaction (tables/flow_slots says how the counters work).
-- Attempts leased with no cap set have slots = 0 and never fire it. Then the stripes of the caps
-- already set, reconciled with the attempts leased right now (an upgrade with work in flight).
begin;
set local role pgflight_owner;

create trigger step_attempts_return_slots before update of status on pgflight.step_attempts
  for each row
  when (old.slots <> 0
        and old.status in ('claimed', 'running', 'cancel_requested')
        and new.status not in ('claimed', 'running', 'cancel_requested'))
  execute function pgflight._return_slots();

select pgflight._set_slot_cap(l.workspace_id, l.max_in_flight)
  from pgflight.workspace_limits l where l.max_in_flight is not null;
select pgflight._set_slot_cap(0, s.max_in_flight) from pgflight.settings s where s.max_in_flight is not null;

commit;
