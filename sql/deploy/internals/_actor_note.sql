-- Deploy pgflight:internals/_actor_note

begin;

set local role pgflight_owner;

-- The note an operator call records: its free-text note, and the p_actor it was given when that is
-- not the login itself. Actor fields record the login (session_user); what a caller says about
-- who it acts for is kept, as a note, never as the actor.
CREATE OR REPLACE FUNCTION pgflight._actor_note(p_note text, p_actor text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case when p_actor is null or p_actor = session_user::text then p_note
              else concat_ws(' ', p_note, format('[on behalf of %s]', p_actor)) end
$$;

COMMENT ON FUNCTION pgflight._actor_note(p_note text, p_actor text) IS 'Internal: an operator''s note with the unauthenticated p_actor appended as "[on behalf of ...]".';

REVOKE ALL ON FUNCTION pgflight._actor_note(p_note text, p_actor text) FROM PUBLIC;

commit;
