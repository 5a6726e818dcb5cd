-- price_usd: one-hour cache writes (usage.cache_creation.ephemeral_1h_input_tokens, part of
-- cache_creation_input_tokens) at twice the input price, the rest of the cache writes at the
-- five-minute rate (1.25x), web searches (usage.server_tool_use.web_search_requests) at USD 0.01
-- each (Anthropic's pricing page); a malformed count is 22023.
begin;
\ir ../_helpers.psql
select plan(4);

select is(pgflight.price_usd('claude-sonnet-4-6',
            '{"cache_creation_input_tokens": 1000000, "cache_creation": {"ephemeral_5m_input_tokens": 400000, "ephemeral_1h_input_tokens": 600000}}'),
          (0.4 * 3.75 + 0.6 * 6.00)::numeric, 'sonnet: 400 k five-minute writes at 3.75, 600 k one-hour writes at 6.00');
select is(pgflight.price_usd('claude-sonnet-4-6', '{"cache_creation_input_tokens": 1000000}'),
          3.75::numeric, 'without the breakdown every write is a five-minute one');
select is(pgflight.price_usd('claude-haiku-4-5', '{"server_tool_use": {"web_search_requests": 3}}'),
          0.03::numeric, 'three web searches');
select throws_ok($$select pgflight.price_usd('claude-haiku-4-5', '{"server_tool_use": {"web_search_requests": -1}}')$$,
                 '22023', null, 'a negative count is refused');

select * from finish();
rollback;
