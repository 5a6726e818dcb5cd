-- Deploy pgflight:internals/_now

begin;

set local role pgflight_owner;

-- No SET clause, fully qualified names, and volatile like the clock_timestamp() it wraps: so the
-- planner inlines it into its callers as a plain expression (a SQL function with a SET clause,
-- or a stable one that calls a volatile function, is called instead, at ~40 µs a call on the hot
-- paths). Hot paths read it once into a local.
CREATE OR REPLACE FUNCTION pgflight._now() RETURNS timestamp with time zone
    LANGUAGE sql
    AS $$
  select case when coalesce(pg_catalog.current_setting('pgflight.fake_now', true), '') = ''
              then pg_catalog.clock_timestamp()
              else pgflight._fake_now(pg_catalog.current_setting('pgflight.fake_now', true)) end
$$;

COMMENT ON FUNCTION pgflight._now() IS 'The engine clock: clock_timestamp(), or the session''s pgflight.fake_now when the fake clock is allowed.';


SET default_table_access_method = heap;

REVOKE ALL ON FUNCTION pgflight._now() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight._now() TO pgflight_worker;
GRANT ALL ON FUNCTION pgflight._now() TO pgflight_operator;
GRANT ALL ON FUNCTION pgflight._now() TO pgflight_reader;

commit;
