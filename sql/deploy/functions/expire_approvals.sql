-- Deploy pgflight:functions/expire_approvals

begin;

set local role pgflight_owner;

-- Sweep: apply the default decision to gates past their expires_at. Bounded by p_limit. Each gate
-- in a subtransaction of its own: one that raises (a cascade that fails, a row in use
-- under the pass's lock_timeout) is skipped with a WARNING naming it, and the rest of the pass
-- goes on; the next pass tries it again.
CREATE OR REPLACE FUNCTION pgflight.expire_approvals(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'expire_approvals');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  for v_row in
    select g.id, g.default_decision from pgflight.approvals g
     where g.decision is null and g.expires_at < (select pgflight._now())
     order by g.expires_at limit p_limit
       for update skip locked
  loop
    begin
      perform pgflight._decide(v_row.id, v_row.default_decision, 'expire_approvals', 'expired', 'approval_expired');
      v_count := v_count + 1;
    exception when others then
      raise warning 'pgflight: expire_approvals skipped gate %: % (SQLSTATE %)', v_row.id, sqlerrm, sqlstate
        using hint = 'The next pass tries it again; the other gates of this pass were decided.';
    end;
  end loop;
  return v_count;
end
$$;

COMMENT ON FUNCTION pgflight.expire_approvals(p_limit integer) IS 'Sweep: apply default decisions to expired gates; returns how many.';

REVOKE ALL ON FUNCTION pgflight.expire_approvals(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.expire_approvals(p_limit integer) TO pgflight_operator;

commit;
