-- Deploy pgflight:tables/agent_runs_hot
-- requires: tables/agent_runs
-- HOT updates of agent_runs (issue 18): an agent iteration updates its row twice (the admission
-- reserves, record_model_call settles). An update is HOT only when no indexed column (key or
-- partial-index predicate) changes and the page has room. agent_runs_reserved_idx is keyed on
-- reserved_attempt_id, so the reservation now keeps reserved_attempt_id (the attempt that last
-- reserved) when it is settled or released: a reservation is held while reserved_iteration is set,
-- and the attempt id changes once per attempt, not twice per iteration. enforce_budgets still
-- finds lapsed reservations by that index (and clears the attempt id of a finished attempt, so the
-- index holds only agents whose attempt is live or not yet swept). Fillfactor 80 leaves room on
-- each page for the new row versions.
begin;
set local role pgflight_owner;

alter table pgflight.agent_runs set (fillfactor = 80);
alter table pgflight.agent_runs drop constraint reservation_is_whole;
alter table pgflight.agent_runs add constraint reservation_is_whole
  check (case when reserved_iteration is null then reserved_usd = 0 and reserved_budget_ids is null
              else reserved_attempt_id is not null end);
comment on column pgflight.agent_runs.reserved_attempt_id is
  'The attempt that last reserved (kept after the reservation is settled, so iterations update the row '
  'HOT); the reservation is held while reserved_iteration is set. Cleared by enforce_budgets once the '
  'attempt is no longer leased.';

commit;
