-- Deploy pgflight:internals/_require_readable_run

begin;

set local role pgflight_owner;

-- The check both stream readers start with: 22023 for a NULL run id; ZF003 "unknown run" for a run
-- that does not exist or that the login may not read (one answer for both: another tenant's run
-- reads as one never issued).
CREATE OR REPLACE FUNCTION pgflight._require_readable_run(p_run_id bigint, p_operation text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
begin
  if p_run_id is null then
    raise exception using errcode = '22023', message = format('%s refused: the run id is null', p_operation),
      hint = 'Pass the run_id that submit_run returned.';
  end if;
  select r.workspace_id into v_ws from pgflight.runs r where r.id = p_run_id;
  if not found or not pgflight._may('reader', v_ws) then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id),
      hint = 'Use a run_id of a workspace the login may read.';
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._require_readable_run(p_run_id bigint, p_operation text) IS 'Internal: 22023 for a NULL run id, ZF003 unknown run for one that does not exist or the login may not read.';

REVOKE ALL ON FUNCTION pgflight._require_readable_run(p_run_id bigint, p_operation text) FROM PUBLIC;

commit;
