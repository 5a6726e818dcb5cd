-- Deploy pgflight:tables/agent_forks
-- requires: tables/agent_ledger_outcomes
-- An agent forked from another at an iteration (fork_agent):
-- - agent_runs.forked_from / forked_at: the agent run it was forked from and the iteration k at which
--   it went its own way; its iterations 0 .. k-1 are copies of the original's (traces), the model
--   call k onwards its own. Both null for an agent that was not forked.
-- - costs.reused: a row of an iteration the fork took from its original: USD 0 and no tokens (the
--   original's costs row paid for it), kept so the iteration's stop_reason and model stay on record.
begin;
set local role pgflight_owner;

alter table pgflight.agent_runs
  add column forked_from bigint,
  add column forked_at integer,
  add constraint fork_names_its_origin_and_iteration
    check ((forked_from is null) = (forked_at is null) and coalesce(forked_at, 1) >= 1);
comment on column pgflight.agent_runs.forked_from is
  'The agent run this one was forked from (fork_agent); null: not a fork.';
comment on column pgflight.agent_runs.forked_at is
  'Of a fork: the first iteration it asked of the model itself (iterations before it are the original''s, reused at USD 0).';

alter table pgflight.costs
  add column reused boolean not null default false,
  add constraint reused_costs_nothing check (not reused or (usd = 0.0 and not lease_lost));
comment on column pgflight.costs.reused is
  'true: an iteration a fork took from the agent it was forked from: USD 0 and no tokens (the original''s row paid).';

commit;
