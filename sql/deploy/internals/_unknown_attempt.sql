-- Deploy pgflight:internals/_unknown_attempt

begin;

set local role pgflight_owner;

-- The answer for an attempt the login may not see: one that does not exist, or one in a workspace
-- where the login has no worker lane and that no worker of the login holds. One shape for both
-- (ZF003, the id and nothing else: no DETAIL, no status, no workspace), so an id of another tenant
-- reads exactly as an id that was never issued. Always raises.
CREATE OR REPLACE FUNCTION pgflight._unknown_attempt(p_attempt_id bigint) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using
    errcode = 'ZF003',
    message = format('unknown attempt %s', p_attempt_id),
    hint    = 'Use the attempt_id returned by claim_batch.';
end
$$;

COMMENT ON FUNCTION pgflight._unknown_attempt(p_attempt_id bigint) IS 'Internal: raise ZF003 unknown attempt (the one answer for an attempt unknown or outside the lanes).';

REVOKE ALL ON FUNCTION pgflight._unknown_attempt(p_attempt_id bigint) FROM PUBLIC;

commit;
