-- Deploy pgflight:functions/complete_step
begin;
set local role pgflight_owner;

-- Complete an attempt this caller holds, storing p_result (any JSON, or null). The step becomes
-- succeeded; its parent is poked; a root ends its run. Errors: ZF001 lease lost (reclaimed,
-- superseded token, already finished), ZF002 cancelled, ZF003 unknown attempt, ZF005 result over
-- settings.max_result_bytes or nested deeper than settings.max_json_depth, ZF012 the attempt is
-- held by another login's worker, 22023 a NULL attempt id or token (the fence's rule:
-- internals/_fencing; an attempt outside the login's worker lanes is unknown, ZF003). A rejected
-- call changes nothing; record it with record_stale_write, or use complete_batch, which records
-- it. Any outcome but succeeded, or none, raises.
create or replace function pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb default null)
returns table (attempt_id bigint, status text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused('complete_step', case when p_attempt_id is null then 'the attempt id'
                                                         else 'the fencing token' end);
  end if;
  -- issue 13: the result is capped (ZF005, nothing written)
  perform pgflight._require_cap('max_result_bytes', (select s.max_result_bytes from pgflight.settings s),
                                octet_length(p_result::text), 'result (bytes)');
  perform pgflight._require_json_depth(p_result, 'result');
  if (select c.outcome from pgflight._complete_many(array[p_attempt_id], array[p_token], array[p_result],
                                                     pgflight._now()) c) is distinct from 'succeeded' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step');
  end if;
  return query select p_attempt_id, 'succeeded'::text;
end
$$;
comment on function pgflight.complete_step(bigint, bigint, jsonb) is
  'Complete a held attempt with a result. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown, '
  'ZF005 result too large, ZF012 another login''s attempt, 22023 NULL attempt id or token.';
grant execute on function pgflight.complete_step(bigint, bigint, jsonb) to pgflight_worker;

commit;
