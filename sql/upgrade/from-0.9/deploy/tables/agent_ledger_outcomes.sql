-- Deploy pgflight:tables/agent_ledger_outcomes
-- requires: tables/agent_write_checks tables/model_prices
-- The agent ledger never counts less than was spent:
-- - agent_runs.reserved_call_out: the held reservation is for a call that is about to be made or
--   is out (set by the admission made just before the request leaves; false for a reservation
--   taken ahead, while the previous call's tools still run). An attempt that ends with its call out
--   cannot know whether the provider answered (and charged): its reservation is charged, not
--   released (_release_reservation), as a costs row marked unknown_outcome.
-- - costs.unknown_outcome: such a row (lease_lost too: it claims no iteration of the transcript);
--   usd is the reservation, tokens are unknown (0). A late answer recorded for the same attempt and
--   iteration (record_orphan_cost) settles the row to the real figures.
-- - costs.cache_creation_1h_tokens, costs.web_search_requests, and their prices in model_prices:
--   one-hour cache writes (usage.cache_creation.ephemeral_1h_input_tokens) are priced at the
--   one-hour rate, server-side web searches (usage.server_tool_use.web_search_requests) per search.
--   Source: Anthropic's pricing page, https://platform.claude.com/docs/en/about-claude/pricing
--   ("Model pricing": 1h cache writes are 2x the base input price, 5-minute writes 1.25x; "Web
--   search tool": USD 10 per 1,000 searches), read 2026-12-02.
-- - traces.block_type: any block type a model answers with (server_tool_use,
--   web_search_tool_result, a type added later) is stored as it came, so the name is checked for
--   its form only (lower-case letters, digits and underscores, at most 64).
begin;
set local role pgflight_owner;

alter table pgflight.agent_runs add column reserved_call_out boolean not null default false;
comment on column pgflight.agent_runs.reserved_call_out is
  'true while the held reservation is for a call that is about to be made or is out (its outcome is '
  'unknown until recorded); false for a reservation taken ahead of its call. A reservation released '
  'with its call out is charged as a costs row marked unknown_outcome.';

alter table pgflight.costs add column unknown_outcome boolean not null default false,
  add column cache_creation_1h_tokens bigint not null default 0,
  add column web_search_requests bigint not null default 0,
  add column budget_ids bigint[],
  add constraint server_tool_counts_are_not_negative
    check (least(cache_creation_1h_tokens, web_search_requests) >= 0),
  add constraint unknown_outcome_is_lease_lost check (lease_lost or not unknown_outcome);
comment on column pgflight.costs.unknown_outcome is
  'true: a call whose attempt ended with the request out and no answer recorded, charged at its '
  'reservation (usd; tokens unknown, 0); settled to the real figures if the answer is recorded late.';
comment on column pgflight.costs.budget_ids is
  'Of an unknown_outcome row: the budgets its reservation was charged to (a late answer settles them); '
  'null otherwise.';
comment on column pgflight.costs.cache_creation_1h_tokens is
  'Of cache_creation_tokens, the one-hour cache writes (usage.cache_creation.ephemeral_1h_input_tokens).';
comment on column pgflight.costs.web_search_requests is
  'Server-side web searches of the call (usage.server_tool_use.web_search_requests).';

alter table pgflight.model_prices
  add column cache_write_1h_usd_per_mtok numeric(12, 6),
  add column web_search_usd_per_request numeric(12, 6) not null default 0,
  add constraint server_tool_prices_are_not_negative
    check (cache_write_1h_usd_per_mtok >= 0.0 and web_search_usd_per_request >= 0.0);
update pgflight.model_prices
   set cache_write_1h_usd_per_mtok = 2 * input_usd_per_mtok,
       web_search_usd_per_request = case when model like 'claude-%' then 0.01 else 0 end;
comment on column pgflight.model_prices.cache_write_1h_usd_per_mtok is
  'USD per million one-hour cache-write tokens (Anthropic: 2x the base input price); null: twice '
  'input_usd_per_mtok, so a row inserted without it is priced by that rule.';
comment on column pgflight.model_prices.web_search_usd_per_request is
  'USD per server-side web search (Anthropic: USD 10 per 1,000 searches).';

alter table pgflight.traces
  drop constraint block_type_is_known,
  -- an operator, no function call: the checks of the agent tables hold no FUNCEXPR (agent_write_checks)
  add constraint block_type_is_a_name check (block_type ~ '^[a-z][a-z0-9_]{0,63}$');

commit;
