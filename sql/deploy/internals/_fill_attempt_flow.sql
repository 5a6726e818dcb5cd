-- Deploy pgflight:internals/_fill_attempt_flow

begin;

set local role pgflight_owner;

-- Fills workspace_id and the key of an attempt inserted without them (the retry paths copy
-- nothing but recipe and priority). submit_run and spawn_children pass them, so on the bulk
-- paths the WHEN clause keeps this trigger from running at all.
-- enable_seqscan off: both lookups are by primary key, and the plans are cached for
-- the session. A bulk INSERT of attempts without workspace_id (by hand, or a loader) into tables
-- analyzed while empty (autovacuum after a TRUNCATE) planned them while runs and steps held one
-- page: a seq scan, kept for every later row while the tables grew, quadratic (a second load of
-- 1,000,000 crashed runs ran over 18 minutes where the first took 92 s).
CREATE OR REPLACE FUNCTION pgflight._fill_attempt_flow() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
begin
  select r.workspace_id into new.workspace_id from pgflight.runs r where r.id = new.run_id;
  select s.concurrency_key, s.concurrency_limit into new.concurrency_key, new.concurrency_limit
    from pgflight.steps s where s.id = new.step_id;
  return new;
end
$$;

COMMENT ON FUNCTION pgflight._fill_attempt_flow() IS 'Internal trigger: copy workspace_id and the concurrency key onto an attempt inserted without them.';

REVOKE ALL ON FUNCTION pgflight._fill_attempt_flow() FROM PUBLIC;

commit;
