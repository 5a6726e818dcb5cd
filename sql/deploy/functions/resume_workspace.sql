-- Deploy pgflight:functions/resume_workspace

begin;

set local role pgflight_owner;

-- Resume a paused workspace: its queued work is claimable again at once (workers are notified).
-- Idempotent. The events log records who resumed and the note.
-- Returns true when this call changed the state. Errors: 22023 bad name, ZF003 unknown workspace.
CREATE OR REPLACE FUNCTION pgflight.resume_workspace(p_name text, p_note text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select pgflight._set_paused('workspace', p_name, false, p_note) $$;

COMMENT ON FUNCTION pgflight.resume_workspace(p_name text, p_note text) IS 'Resume a workspace''s claims (leased work finishes); logged with the login and note. Errors: 22023, ZF003.';

REVOKE ALL ON FUNCTION pgflight.resume_workspace(p_name text, p_note text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.resume_workspace(p_name text, p_note text) TO pgflight_operator;

commit;
