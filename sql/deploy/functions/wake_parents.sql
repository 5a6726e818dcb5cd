-- Deploy pgflight:functions/wake_parents

begin;

set local role pgflight_owner;

-- Sweep: wake parked parents whose children are all terminal but who were not woken (a lost
-- poke). The children counter is the truth, so the check is O(1) per parent. Bounded by p_limit.
CREATE OR REPLACE FUNCTION pgflight.wake_parents(p_limit integer DEFAULT 1000) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_count integer := 0;
begin
  perform pgflight._require_lane('operator', null, 'wake_parents');  -- acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit
  for v_row in
    select a.step_id from pgflight.step_attempts a
      join pgflight.steps s on s.id = a.step_id
     where a.status = 'awaiting_children' and s.children_pending <= 0
     limit p_limit
       for update of a skip locked
  loop
    if pgflight._wake(v_row.step_id, 'parent_resumed', 'wake_parents') then
      v_count := v_count + 1;
    end if;
  end loop;
  return v_count;
end
$$;

COMMENT ON FUNCTION pgflight.wake_parents(p_limit integer) IS 'Sweep: requeue parked parents whose children are all terminal; returns how many woke.';

REVOKE ALL ON FUNCTION pgflight.wake_parents(p_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.wake_parents(p_limit integer) TO pgflight_operator;

commit;
