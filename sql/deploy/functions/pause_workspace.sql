-- Deploy pgflight:functions/pause_workspace

begin;

set local role pgflight_owner;

-- Pause a workspace: its queued work is not claimed until resume_workspace; attempts already leased
-- finish normally. Idempotent (pausing a paused workspace keeps the first pause's time and actor).
-- The events log records who paused (the session's login) and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name, ZF003 unknown workspace.
CREATE OR REPLACE FUNCTION pgflight.pause_workspace(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._set_paused('workspace', p_name, true, p_note) $$;

COMMENT ON FUNCTION pgflight.pause_workspace(p_name text, p_note text) IS 'Pause a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';

REVOKE ALL ON FUNCTION pgflight.pause_workspace(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.pause_workspace(p_name text, p_note text) TO pgflight_operator;

commit;
