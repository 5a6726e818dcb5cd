-- Deploy pgflight:tables/model_prices

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.model_prices (
    model text NOT NULL,
    input_usd_per_mtok numeric(12,6) NOT NULL,
    output_usd_per_mtok numeric(12,6) NOT NULL,
    cache_write_usd_per_mtok numeric(12,6) NOT NULL,
    cache_read_usd_per_mtok numeric(12,6) NOT NULL,
    as_of date NOT NULL,
    source text NOT NULL,
    cache_write_1h_usd_per_mtok numeric(12,6),
    web_search_usd_per_request numeric(12,6) DEFAULT 0 NOT NULL,
    CONSTRAINT model_is_not_blank CHECK ((btrim(model) <> ''::text)),
    CONSTRAINT prices_are_not_negative CHECK (((input_usd_per_mtok >= (0)::numeric) AND (output_usd_per_mtok >= (0)::numeric) AND (cache_write_usd_per_mtok >= (0)::numeric) AND (cache_read_usd_per_mtok >= (0)::numeric))),
    CONSTRAINT server_tool_prices_are_not_negative CHECK (((cache_write_1h_usd_per_mtok >= 0.0) AND (web_search_usd_per_request >= 0.0)))
);

COMMENT ON TABLE pgflight.model_prices IS 'USD per million tokens for each model (or model-name prefix; the longest matching prefix wins): input, output, cache_write (5-minute cache writes), cache_read (cache hits). as_of: the date the price was read; source: where.';

COMMENT ON COLUMN pgflight.model_prices.cache_write_1h_usd_per_mtok IS 'USD per million one-hour cache-write tokens (Anthropic: 2x the base input price); null: twice input_usd_per_mtok, so a row inserted without it is priced by that rule.';

COMMENT ON COLUMN pgflight.model_prices.web_search_usd_per_request IS 'USD per server-side web search (Anthropic: USD 10 per 1,000 searches).';

ALTER TABLE ONLY pgflight.model_prices
    ADD CONSTRAINT model_prices_pkey PRIMARY KEY (model);

INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-fable-5-1', 10.000000, 50.000000, 12.500000, 0.250000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 20.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-fable-5', 10.000000, 50.000000, 12.500000, 1.000000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 20.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-5', 5.000000, 25.000000, 6.250000, 0.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 10.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-4-8', 5.000000, 25.000000, 6.250000, 0.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 10.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-4-7', 5.000000, 25.000000, 6.250000, 0.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 10.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-4-6', 5.000000, 25.000000, 6.250000, 0.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 10.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-4-5', 5.000000, 25.000000, 6.250000, 0.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 10.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-4-1', 15.000000, 75.000000, 18.750000, 1.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 30.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-4-0', 15.000000, 75.000000, 18.750000, 1.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 30.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-opus-4-2025', 15.000000, 75.000000, 18.750000, 1.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 30.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-sonnet-4-6', 3.000000, 15.000000, 3.750000, 0.300000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 6.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-sonnet-4-5', 3.000000, 15.000000, 3.750000, 0.300000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 6.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-sonnet-4-0', 3.000000, 15.000000, 3.750000, 0.300000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 6.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-sonnet-4-2025', 3.000000, 15.000000, 3.750000, 0.300000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 6.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-3-7-sonnet', 3.000000, 15.000000, 3.750000, 0.300000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 6.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-haiku-4-5', 1.000000, 5.000000, 1.250000, 0.100000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 2.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-3-5-haiku', 0.800000, 4.000000, 1.000000, 0.080000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 1.600000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-3-haiku', 0.250000, 1.250000, 0.300000, 0.030000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 0.500000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('claude-3-opus', 15.000000, 75.000000, 18.750000, 1.500000, '2026-11-29', 'https://platform.claude.com/docs/en/about-claude/pricing', 30.000000, 0.010000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('offline', 0.000000, 0.000000, 0.000000, 0.000000, '2026-11-29', 'pgflight: the offline deterministic model is free', 0.000000, 0.000000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('gpt-4.1', 2.000000, 8.000000, 2.000000, 0.500000, '2026-12-07', 'https://platform.openai.com/docs/pricing', 2.000000, 0.000000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('gpt-4.1-mini', 0.400000, 1.600000, 0.400000, 0.100000, '2026-12-07', 'https://platform.openai.com/docs/pricing', 0.400000, 0.000000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('gpt-4o', 2.500000, 10.000000, 2.500000, 1.250000, '2026-12-07', 'https://platform.openai.com/docs/pricing', 2.500000, 0.000000);
INSERT INTO pgflight.model_prices (model, input_usd_per_mtok, output_usd_per_mtok, cache_write_usd_per_mtok, cache_read_usd_per_mtok, as_of, source, cache_write_1h_usd_per_mtok, web_search_usd_per_request) VALUES ('gpt-4o-mini', 0.150000, 0.600000, 0.150000, 0.075000, '2026-12-07', 'https://platform.openai.com/docs/pricing', 0.150000, 0.000000);

commit;
