-- Deploy pgflight:internals/_lock_event_channel

begin;

set local role pgflight_owner;

-- Insert-or-lock the channel row of (workspace, name, key). wait_event and emit_event both take it
-- before they read the other side's rows, so of a wait being registered and an event being emitted
-- at the same time, the second to lock sees the first's committed rows: no lost wake-up.
CREATE OR REPLACE FUNCTION pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  insert into pgflight.event_channels as c (workspace_id, name, key, touched_at)
  values (p_workspace_id, p_name, p_key, pgflight._now())
  on conflict on constraint event_channels_pkey do update set touched_at = excluded.touched_at;
end
$$;

COMMENT ON FUNCTION pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text) IS 'Internal: insert or lock the event channel row of a workspace, name and key (serialises waits and emits).';

REVOKE ALL ON FUNCTION pgflight._lock_event_channel(p_workspace_id bigint, p_name text, p_key text) FROM PUBLIC;

commit;
