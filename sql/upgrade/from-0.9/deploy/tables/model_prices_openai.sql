-- Deploy pgflight:tables/model_prices_openai
-- requires: tables/agent_ledger_outcomes
-- Prices of OpenAI models for the openai provider (Chat Completions with tools), USD per million
-- tokens. Source: OpenAI's API pricing page, https://platform.openai.com/docs/pricing (Standard
-- tier: input, cached input, output). OpenAI charges no surcharge for writing its prompt cache,
-- so cache_write is the input price; cached input tokens are cache_read (the provider reports
-- usage.prompt_tokens_details.cached_tokens as cache_read_input_tokens and the rest of
-- prompt_tokens as input_tokens). No server-side web search is priced here. The longest matching
-- prefix wins, so gpt-4o-mini is not priced as gpt-4o.
begin;
set local role pgflight_owner;

insert into pgflight.model_prices
  (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok,
   cache_write_1h_usd_per_mtok, web_search_usd_per_request, as_of, source)
select m.model, m.i, m.o, m.i, m.cr, m.i, 0, date '2026-12-07', 'https://platform.openai.com/docs/pricing'
  from (values
    ('gpt-4.1',       2.00,  8.00, 0.50),
    ('gpt-4.1-mini',  0.40,  1.60, 0.10),
    ('gpt-4o',        2.50, 10.00, 1.25),
    ('gpt-4o-mini',   0.15,  0.60, 0.075)
  ) as m(model, i, o, cr)
on conflict (model) do nothing;

commit;
