-- Deploy pgflight:functions/fail_step_text

begin;

set local role pgflight_owner;

-- fail_step with the error as JSON text, parsed here. A jsonb argument that PostgreSQL refuses (a
-- \u0000, NaN, malformed text) fails before any function runs, so fail_step cannot answer it and
-- the attempt stays claimed until its lease lapses; this form lets a worker in any language fail
-- a step with whatever error it caught. An error PostgreSQL refuses, or one over
-- settings.max_error_bytes, is stored as {"message": "error refused by PostgreSQL: ...",
-- "sqlstate": ..., "raw": its first 1,000 characters as a string}; the failure itself (retry or
-- dead letter, p_options) is fail_step's. Returns fail_step's row. Errors: fail_step's (ZF001
-- lease lost, ZF002 cancelled, ZF003 unknown attempt, ZF012, 22023 bad options).
-- Locking: fail_step's.
CREATE OR REPLACE FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, outcome text, next_attempt_id bigint, available_after timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_error jsonb;
  v_max bigint := (select s.max_error_bytes from pgflight.settings s);
begin
  begin
    v_error := p_error::jsonb;
    if octet_length(v_error::text) > v_max then
      raise exception using errcode = 'ZF005',
        message = format('error too large: %s bytes; the cap is %s bytes (settings.max_error_bytes)',
                         octet_length(v_error::text), v_max);
    end if;
  exception when others then
    v_error := jsonb_build_object('message', 'error refused by PostgreSQL: ' || sqlerrm, 'sqlstate', sqlstate,
                                  'raw', left(p_error, 1000));
  end;
  return query select f.attempt_id, f.outcome, f.next_attempt_id, f.available_after
                 from pgflight.fail_step(p_attempt_id, p_token, v_error, p_options) f;
end
$$;

COMMENT ON FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb) IS 'Fail a held attempt with its error as JSON text: an error PostgreSQL refuses (\u0000, NaN, malformed, over max_error_bytes) is stored as a message with its first characters. Options and errors: fail_step''s.';

REVOKE ALL ON FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.fail_step_text(p_attempt_id bigint, p_token bigint, p_error text, p_options jsonb) TO pgflight_worker;

commit;
