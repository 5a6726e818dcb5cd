-- Deploy pgflight:internals/_raise_budget_exceeded

begin;

set local role pgflight_owner;

-- Raise a refusal {message, detail, hint[, sqlstate]} (see _move_budget, _iteration_refusal,
-- _token_admission): ZF007, or the refusal's sqlstate (ZF013 for model tokens per minute).
CREATE OR REPLACE FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = coalesce(p_refusal ->> 'sqlstate', 'ZF007'),
    message = p_refusal ->> 'message',
    detail  = coalesce(p_refusal ->> 'detail', ''),
    hint    = coalesce(p_refusal ->> 'hint', '');
end
$$;

COMMENT ON FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) IS 'Internal: raise a refusal (ZF007, or its sqlstate: ZF013) with its message, detail and hint.';

REVOKE ALL ON FUNCTION pgflight._raise_budget_exceeded(p_refusal jsonb) FROM PUBLIC;

commit;
