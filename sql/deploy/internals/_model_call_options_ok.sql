-- Deploy pgflight:internals/_model_call_options_ok

begin;

set local role pgflight_owner;

-- Whether record_model_call's options are the agent loop's own (only the keys stop_reason,
-- retries, mark_tools, well-typed, in range, stop_reason at most 256 characters), so they pass
-- without the option spec's lookup (which cost more than the rest of the call); false sends them to
-- _check_options, which raises 22023 naming the key. One JSON path: an expression of some twenty
-- function calls was initialised anew in every transaction. Anything the path cannot evaluate
-- (silent) is not true, so it takes the checked way.
CREATE OR REPLACE FUNCTION pgflight._model_call_options_ok(p_options jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $_$
  select coalesce(pg_catalog.jsonb_path_match(p_options, '$.type() == "object"
                 && !exists($.keyvalue() ? (@.key != "stop_reason" && @.key != "retries" && @.key != "mark_tools"))
                 && (!exists($.stop_reason) || $.stop_reason.type() == "null" || $.stop_reason.type() == "string")
                 && (!exists($.retries) || $.retries.type() == "null"
                     || ($.retries.type() == "number" && $.retries >= 0 && $.retries <= 1000000
                         && $.retries.floor() == $.retries))
                 && (!exists($.mark_tools) || $.mark_tools.type() == "null" || $.mark_tools.type() == "boolean")',
                                              silent => true), false)
         and coalesce(pg_catalog.length(p_options ->> 'stop_reason') <= 256, true)
$_$;

COMMENT ON FUNCTION pgflight._model_call_options_ok(p_options jsonb) IS 'Internal (record_model_call): whether the options are the agent loop''s well-formed stop_reason, retries, mark_tools (true) or need _check_options (false). Inlined: no SET clause.';

REVOKE ALL ON FUNCTION pgflight._model_call_options_ok(p_options jsonb) FROM PUBLIC;

commit;
