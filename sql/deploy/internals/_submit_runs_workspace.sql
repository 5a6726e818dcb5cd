-- Deploy pgflight:internals/_submit_runs_workspace

begin;

set local role pgflight_owner;

-- The workspace of a submit_runs call and its lane, checked once for the whole call: its id and
-- max_run_usd. The row is locked FOR KEY SHARE, the lock each run's foreign key check takes
-- (submit_runs writes with those checks off for a large call). One answer (ZF003) for a name
-- unknown and one the login sees nothing of; ZF012 only where the login reads and is no operator.
-- The common case costs the one _may probe.
CREATE OR REPLACE FUNCTION pgflight._submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  select w.id, w.max_run_usd into id, max_run_usd from pgflight.workspaces w where w.name = p_workspace
     for key share;
  if not found or not pgflight._may('operator', id) then
    if not found or not pgflight._may('reader', id) then
      perform pgflight._unknown_workspace(p_workspace);
    end if;
    perform pgflight._require_lane('operator', id, 'submit_runs');
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric) IS 'Internal (submit_runs): the workspace by name, FOR KEY SHARE, with its max_run_usd; ZF003 unknown or unseen, ZF012 no operator lane.';

REVOKE ALL ON FUNCTION pgflight._submit_runs_workspace(p_workspace text, OUT id bigint, OUT max_run_usd numeric) FROM PUBLIC;

commit;
