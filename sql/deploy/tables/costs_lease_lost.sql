-- Deploy pgflight:tables/costs_lease_lost
-- requires: tables/costs
-- Paid model calls whose holder lost the lease meanwhile (issue 14): the money was spent and
-- budgets must see it, so record_orphan_cost writes them to costs too, marked lease_lost. Such a
-- row has no traces and does not claim its iteration: the one row per (agent run, iteration) that
-- record_model_call writes is now a partial unique index (not lease_lost), and the orphans are
-- unique per (agent run, iteration, attempt). The primary key moves to id.
begin;
set local role pgflight_owner;

alter table pgflight.costs add column lease_lost boolean not null default false;
alter table pgflight.costs drop constraint one_call_per_iteration;
alter table pgflight.costs add constraint costs_pkey primary key (id);
create unique index one_call_per_iteration on pgflight.costs (agent_run_id, iteration) where not lease_lost;
create unique index one_orphan_per_attempt on pgflight.costs (agent_run_id, iteration, attempt_id) where lease_lost;
comment on column pgflight.costs.lease_lost is
  'true: a model call paid for by an attempt that had lost its lease (record_orphan_cost); charged to the '
  'budgets and run_audit, not part of the transcript.';

commit;
