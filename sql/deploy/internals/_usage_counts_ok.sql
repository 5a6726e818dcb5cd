-- Deploy pgflight:internals/_usage_counts_ok

begin;

set local role pgflight_owner;

-- Whether a usage object's four token counts (input_tokens, output_tokens,
-- cache_creation_input_tokens, cache_read_input_tokens) are each absent, null or an integer from
-- 0 to 1e10, so record_model_call reads them directly; false sends them through _opt_int, which
-- raises 22023 naming the key. One JSON path (the expression it replaced called some sixty
-- functions, each checked for EXECUTE and initialised anew in every transaction); anything it
-- cannot evaluate (silent) is not true.
CREATE OR REPLACE FUNCTION pgflight._usage_counts_ok(p_usage jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
  select pg_catalog.jsonb_path_match(p_usage, '$.type() == "object"
                             && (!exists($.input_tokens) || $.input_tokens.type() == "null"
                                 || ($.input_tokens.type() == "number" && $.input_tokens >= 0 && $.input_tokens <= 10000000000
                                     && $.input_tokens.floor() == $.input_tokens))
                             && (!exists($.output_tokens) || $.output_tokens.type() == "null"
                                 || ($.output_tokens.type() == "number" && $.output_tokens >= 0 && $.output_tokens <= 10000000000
                                     && $.output_tokens.floor() == $.output_tokens))
                             && (!exists($.cache_creation_input_tokens) || $.cache_creation_input_tokens.type() == "null"
                                 || ($.cache_creation_input_tokens.type() == "number" && $.cache_creation_input_tokens >= 0 && $.cache_creation_input_tokens <= 10000000000
                                     && $.cache_creation_input_tokens.floor() == $.cache_creation_input_tokens))
                             && (!exists($.cache_read_input_tokens) || $.cache_read_input_tokens.type() == "null"
                                 || ($.cache_read_input_tokens.type() == "number" && $.cache_read_input_tokens >= 0 && $.cache_read_input_tokens <= 10000000000
                                     && $.cache_read_input_tokens.floor() == $.cache_read_input_tokens))', silent => true)
$_$;

COMMENT ON FUNCTION pgflight._usage_counts_ok(p_usage jsonb) IS 'Internal (record_model_call): whether usage''s four token counts are absent, null or integers 0 .. 1e10. Inlined: no SET clause.';

REVOKE ALL ON FUNCTION pgflight._usage_counts_ok(p_usage jsonb) FROM PUBLIC;

commit;
