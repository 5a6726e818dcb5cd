-- Deploy pgflight:internals/_notify_ready

begin;

set local role pgflight_owner;

-- Wake idle workers. The payload is this transaction's id (never user data, C35): a *wake ticket*.
-- A pgflight worker that hears it takes a session advisory lock on wake_ticket_key(a key of its
-- recipe set and the ticket) on its LISTEN connection and claims only if it got it, so one idle
-- process per recipe group claims instead of all of them (README "Wake-ups (LISTEN)").
-- wake_ticket_key mixes in the engine's secret and the login's worker lanes: a login that is not
-- a worker of those workspaces cannot compute the key, so it cannot win the ticket first; a worker in
-- another language may treat any notification on pgflight_ready as "claim now", as before.
-- PostgreSQL folds identical notifications of one transaction into one, and the id is the same
-- throughout a transaction, so a transaction still sends at most one. The transaction has
-- written the step that became ready, so it has an id already: asking for it assigns nothing.
CREATE OR REPLACE FUNCTION pgflight._notify_ready() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform pg_catalog.pg_notify('pgflight_ready', pg_catalog.pg_current_xact_id()::text);
end
$$;

COMMENT ON FUNCTION pgflight._notify_ready() IS 'Internal: NOTIFY pgflight_ready with the transaction id as payload (a wake ticket, never user data).';

REVOKE ALL ON FUNCTION pgflight._notify_ready() FROM PUBLIC;

commit;
