-- Deploy pgflight:internals/_claim_global_shares

begin;

set local role pgflight_owner;

-- The global in-flight cap shared fairly among the workspaces with queued work (_claim_fair's
-- section 3). p_global: settings.max_in_flight (not null); p_recipes, p_lane_ws: the claim's
-- recipes (null: every one) and the workspaces of its ready lanes; p_ws: the workspaces it serves;
-- p_batch: the most it may still claim. While more than one unpaused workspace has queued work
-- (counted over every recipe, whatever this call names, so a claim of one recipe cannot see fewer
-- of them), none takes more than ceil(p_global / those workspaces), counting the leases it holds
-- now. Returns, per workspace of p_ws (same order), the global slots it may still take; null when
-- no share applies: one workspace waiting, or a cap far from full. That second case is checked
-- first and costs one read of the cap's stripes: while everything leased under the cap and the
-- whole batch fit in one share, no workspace can pass its share (the stripes' held is at least
-- what is leased under the cap; returns not yet folded only lower it), so the leases are counted
-- only while the cap is contended, and then at most a share of each workspace's
-- (step_attempts_leased_ws_idx). Claims of one workspace that overlap in time count the committed
-- leases: together they may pass its share by what they took at that instant, never the cap.
-- Volatile, as the claim: each read takes its own snapshot, so it counts the leases committed
-- the moment it runs.
CREATE OR REPLACE FUNCTION pgflight._claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer) RETURNS integer[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queued_ws bigint[];
  v_busy integer;
  v_share integer;
  v_fair integer[];
begin
  if p_recipes is null then
    v_queued_ws := p_lane_ws;                 -- one lane per workspace: these are they
  else
    v_queued_ws := array(select l.workspace_id from pgflight._ready_lanes(null) l);
  end if;
  select count(*)::integer into v_busy from unnest(v_queued_ws) q(id)
   where not exists (select from pgflight.workspace_limits l where l.workspace_id = q.id and l.paused_at is not null);
  if v_busy <= 1 then
    return null;                              -- a workspace alone with queued work may take the whole cap
  end if;
  v_share := ceil(p_global::numeric / v_busy)::integer;
  if (select coalesce(sum(f.held), 0) from pgflight.flow_slots f where f.scope = 0) + p_batch <= v_share then
    return null;                              -- the cap is far from full: no workspace can pass its share
  end if;
  select array_agg(greatest(0, v_share - h.n) order by w.o) into v_fair
    from unnest(p_ws) with ordinality w(id, o)
    cross join lateral (
      select count(*)::integer as n
        from (select from pgflight.step_attempts a
               where a.workspace_id = w.id and a.status in ('claimed', 'running', 'cancel_requested')
               limit v_share) x) h;
  return v_fair;
end
$$;

COMMENT ON FUNCTION pgflight._claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer) IS 'Internal (_claim_fair): per served workspace, the global in-flight slots it may still take under its fair share of the global cap (ceil(cap / workspaces with queued work) less its leases); null when no share applies.';

REVOKE ALL ON FUNCTION pgflight._claim_global_shares(p_global integer, p_recipes text[], p_lane_ws bigint[], p_ws bigint[], p_batch integer) FROM PUBLIC;

commit;
