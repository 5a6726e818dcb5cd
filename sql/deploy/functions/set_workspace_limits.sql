-- Deploy pgflight:functions/set_workspace_limits

begin;

set local role pgflight_owner;

-- Set a workspace's flow limits. options (each optional; a key given as null removes the limit,
-- a key left out keeps its value): max_in_flight (leased attempts at once, 0 .. 1e6), share
-- (weight in the fair claim, 1 .. 1000, default 1), starts_per_s (claims per second, with burst:
-- the most claimed at once after a quiet spell, default max(1, starts_per_s)),
-- model_tokens_per_min (input + output tokens per rolling minute, checked before each model
-- call). Takes effect at the next claim; a new max_in_flight counts the attempts leased now. Returns the limits now in force.
-- Errors: 22023 unknown option or out of range, ZF003 unknown workspace.
CREATE OR REPLACE FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) RETURNS TABLE(workspace text, max_in_flight integer, share integer, starts_per_s double precision, burst double precision, model_tokens_per_min bigint, paused_at timestamp with time zone, paused_by text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint := pgflight._workspace_id(p_workspace);
  v_old pgflight.workspace_limits;
  v_rate double precision;
begin
  perform pgflight._require_lane('operator', v_ws, 'set_workspace_limits');  -- tenants
  perform pgflight._require_known_keys(p_options, array['max_in_flight', 'share', 'starts_per_s', 'burst', 'model_tokens_per_min']);
  insert into pgflight.workspace_limits (workspace_id) values (v_ws) on conflict do nothing;
  select * into v_old from pgflight.workspace_limits l where l.workspace_id = v_ws for update;
  v_rate := case when p_options ? 'starts_per_s' then pgflight._limit_option(p_options, 'starts_per_s', 1e-6, 1e6, false)
                 else v_old.starts_per_s end;
  update pgflight.workspace_limits l
     set max_in_flight = case when p_options ? 'max_in_flight'
                              then pgflight._limit_option(p_options, 'max_in_flight', 0, 1e6, true)::integer
                              else l.max_in_flight end,
         share = case when p_options ? 'share'
                      then coalesce(pgflight._limit_option(p_options, 'share', 1, 1000, true)::integer, 1)
                      else l.share end,
         starts_per_s = v_rate,
         burst = case when v_rate is null then null
                      when p_options ? 'burst' then coalesce(pgflight._limit_option(p_options, 'burst', 1, 1e6, false), greatest(1, v_rate))
                      else coalesce(l.burst, greatest(1, v_rate)) end,
         -- a changed rate starts with a full bucket
         tokens = case when v_rate is distinct from l.starts_per_s then null else l.tokens end,
         model_tokens_per_min = case when p_options ? 'model_tokens_per_min'
                                     then pgflight._limit_option(p_options, 'model_tokens_per_min', 1, 1e15, true)::bigint
                                     else l.model_tokens_per_min end,
         updated_at = pgflight._now()
   where l.workspace_id = v_ws;
  -- the cap's slot stripes (tables/flow_slots), rebuilt and reconciled when the cap changes
  if p_options ? 'max_in_flight' then
    perform pgflight._set_slot_cap(v_ws, l.max_in_flight) from pgflight.workspace_limits l where l.workspace_id = v_ws;
  end if;
  return query
    select p_workspace, l.max_in_flight, l.share, l.starts_per_s, l.burst, l.model_tokens_per_min, l.paused_at, l.paused_by
      from pgflight.workspace_limits l where l.workspace_id = v_ws;
end
$$;

COMMENT ON FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) IS 'Set a workspace''s max_in_flight, share, starts_per_s/burst, model_tokens_per_min (null removes). Errors: 22023, ZF003.';

REVOKE ALL ON FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.set_workspace_limits(p_workspace text, p_options jsonb) TO pgflight_operator;

commit;
