-- Revert pgflight:tables/costs_lease_lost
begin;
set local role pgflight_owner;

delete from pgflight.costs where lease_lost;
drop index pgflight.one_orphan_per_attempt;
drop index pgflight.one_call_per_iteration;
alter table pgflight.costs drop constraint costs_pkey;
alter table pgflight.costs add constraint one_call_per_iteration primary key (agent_run_id, iteration);
alter table pgflight.costs drop column lease_lost;

commit;
