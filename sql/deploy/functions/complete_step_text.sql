-- Deploy pgflight:functions/complete_step_text

begin;

set local role pgflight_owner;

-- complete_step with the result as JSON text, parsed here. A jsonb argument that PostgreSQL
-- refuses (a \u0000, NaN, malformed text) fails before any function runs, so complete_step cannot
-- answer it and the attempt stays claimed until its lease lapses; this form lets a worker in any
-- language hand over whatever its recipe returned. A result PostgreSQL refuses, or one over
-- settings.max_result_bytes, fails the step alone and not retryable (reason result_refused, the
-- error says why: message and sqlstate), as complete_batch's text form does; any other result
-- completes the step exactly as complete_step. Returns the attempt and its outcome, succeeded or
-- result_refused (the step dead-lettered; the words every batch function shares). Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown attempt, ZF012 the attempt
-- is held by another login's worker (nothing written by a refused call).
-- Locking: complete_step's, or _complete_refusing's (the attempt, then what its failure ends).
CREATE OR REPLACE FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) RETURNS TABLE(attempt_id bigint, status text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_json jsonb;
  v_error jsonb;
  v_max bigint := (select s.max_result_bytes from pgflight.settings s);
  v_outcome text;
begin
  begin
    v_json := p_result::jsonb;
    if octet_length(v_json::text) > v_max then
      v_error := jsonb_build_object(
        'message', format('result too large: %s bytes; the cap is %s bytes (settings.max_result_bytes)',
                          octet_length(v_json::text), v_max),
        'sqlstate', 'ZF005');
    end if;
  exception when others then
    v_error := jsonb_build_object('message', 'result refused by PostgreSQL: ' || sqlerrm, 'sqlstate', sqlstate);
  end;
  if v_error is null then
    return query select c.attempt_id, c.status from pgflight.complete_step(p_attempt_id, p_token, v_json) c;
    return;
  end if;
  select r.outcome into v_outcome
    from pgflight._complete_refusing(array[p_attempt_id], array[p_token], array[null::jsonb], array[v_error]) r;
  if v_outcome is distinct from 'result_refused' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step_text');
  end if;
  return query select p_attempt_id, 'result_refused'::text;
end
$$;

COMMENT ON FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) IS 'Complete a held attempt with its result as JSON text: a result PostgreSQL refuses (\u0000, NaN, malformed, over max_result_bytes) dead-letters the step (outcome result_refused, not retried). Errors: ZF001, ZF002, ZF003, ZF012.';

REVOKE ALL ON FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_step_text(p_attempt_id bigint, p_token bigint, p_result text) TO pgflight_worker;

commit;
