-- Deploy pgflight:tables/model_prices
-- requires: schema
-- The price table that turns a model call's usage into USD. One row per model name (or model
-- name prefix: a dated id such as claude-sonnet-4-5-20250929 is priced by its longest matching
-- prefix row). Prices are USD per million tokens (MTok).
-- Seeded from Anthropic's published price list, https://platform.claude.com/docs/en/about-claude/pricing
-- ("Model pricing": base input, 5-minute cache writes, cache hits, output), read 2026-11-29.
-- cache_write is the 5-minute cache-write rate (the API default). Operators update prices with a
-- plain INSERT ... ON CONFLICT (model) DO UPDATE as pgflight_owner; costs already recorded keep
-- the USD computed at the time.
begin;
set local role pgflight_owner;

create table pgflight.model_prices (
  model                     text primary key,
  input_usd_per_mtok        numeric(12, 6) not null,
  output_usd_per_mtok       numeric(12, 6) not null,
  cache_write_usd_per_mtok  numeric(12, 6) not null,
  cache_read_usd_per_mtok   numeric(12, 6) not null,
  as_of                     date not null,
  source                    text not null,
  constraint prices_are_not_negative check (
    input_usd_per_mtok >= 0 and output_usd_per_mtok >= 0
    and cache_write_usd_per_mtok >= 0 and cache_read_usd_per_mtok >= 0),
  constraint model_is_not_blank check (btrim(model) <> '')
);
comment on table pgflight.model_prices is
  'USD per million tokens for each model (or model-name prefix; the longest matching prefix wins): '
  'input, output, cache_write (5-minute cache writes), cache_read (cache hits). as_of: the date the '
  'price was read; source: where.';

insert into pgflight.model_prices
  (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source)
select m.model, m.i, m.o, m.cw, m.cr, date '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing'
  from (values
    ('claude-fable-5-1',        10.00, 50.00, 12.50, 0.25),
    ('claude-fable-5',          10.00, 50.00, 12.50, 1.00),
    ('claude-opus-5',            5.00, 25.00,  6.25, 0.50),
    ('claude-opus-4-8',          5.00, 25.00,  6.25, 0.50),
    ('claude-opus-4-7',          5.00, 25.00,  6.25, 0.50),
    ('claude-opus-4-6',          5.00, 25.00,  6.25, 0.50),
    ('claude-opus-4-5',          5.00, 25.00,  6.25, 0.50),
    ('claude-opus-4-1',         15.00, 75.00, 18.75, 1.50),
    ('claude-opus-4-0',         15.00, 75.00, 18.75, 1.50),
    ('claude-opus-4-2025',      15.00, 75.00, 18.75, 1.50),
    ('claude-sonnet-4-6',        3.00, 15.00,  3.75, 0.30),
    ('claude-sonnet-4-5',        3.00, 15.00,  3.75, 0.30),
    ('claude-sonnet-4-0',        3.00, 15.00,  3.75, 0.30),
    ('claude-sonnet-4-2025',     3.00, 15.00,  3.75, 0.30),
    ('claude-3-7-sonnet',        3.00, 15.00,  3.75, 0.30),
    ('claude-haiku-4-5',         1.00,  5.00,  1.25, 0.10),
    ('claude-3-5-haiku',         0.80,  4.00,  1.00, 0.08),
    ('claude-3-haiku',           0.25,  1.25,  0.30, 0.03),
    ('claude-3-opus',           15.00, 75.00, 18.75, 1.50)
  ) as m(model, i, o, cw, cr)
union all
select 'offline', 0, 0, 0, 0, date '2026-11-29', 'pgflight: the offline deterministic model is free';

commit;
