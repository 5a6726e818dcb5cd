-- Deploy pgflight:internals/_null_refused

begin;

set local role pgflight_owner;

-- The answer for a NULL where a fenced function needs a value (an attempt id, a fencing token, an
-- element of their arrays): 22023, raised before anything is read, the same for every id. A NULL
-- never matches a token: a never-claimed attempt has none, so a NULL must not reach a comparison
-- that treats two NULLs as equal. Always raises.
CREATE OR REPLACE FUNCTION pgflight._null_refused(p_operation text, p_what text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = '22023',
    message = format('%s refused: %s is null', p_operation, p_what),
    hint    = 'Pass the attempt_id and fencing_token that claim_batch returned, one token per attempt.';
end
$$;

COMMENT ON FUNCTION pgflight._null_refused(p_operation text, p_what text) IS 'Internal: raise 22023 for a NULL attempt id, fencing token or array element of a fenced call.';

REVOKE ALL ON FUNCTION pgflight._null_refused(p_operation text, p_what text) FROM PUBLIC;

commit;
