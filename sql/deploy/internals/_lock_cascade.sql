-- Deploy pgflight:internals/_lock_cascade

begin;

set local role pgflight_owner;

-- _cascade_root and _lock_subtree for the step of p_attempt_id (fail_step; the reclaim with
-- p_nowait). Returns whether anything beyond the attempt's own subtree-less self was locked.
CREATE OR REPLACE FUNCTION pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_top bigint;
begin
  v_top := pgflight._cascade_root((select a.step_id from pgflight.step_attempts a where a.id = p_attempt_id));
  if v_top is null then
    return false;
  end if;
  perform pgflight._lock_subtree(v_top, p_nowait);
  return true;
end
$$;

COMMENT ON FUNCTION pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean) IS 'Internal: lock, deepest first, the live attempts an unsuccessful end of this attempt''s step may cancel (_cascade_root, _lock_subtree); false when that is none but its own.';

REVOKE ALL ON FUNCTION pgflight._lock_cascade(p_attempt_id bigint, p_nowait boolean) FROM PUBLIC;

commit;
