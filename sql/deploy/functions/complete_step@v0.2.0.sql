-- Deploy pgflight:functions/complete_step
begin;
set local role pgflight_owner;

-- Complete an attempt this caller holds, storing p_result (any JSON, or null). The step becomes
-- succeeded; its parent is poked; a root ends its run. Errors: ZF001 lease lost (reclaimed,
-- superseded token, already finished), ZF002 cancelled, ZF003 unknown attempt. A rejected call
-- changes nothing; record it with record_stale_write, or use complete_batch, which records it.
create or replace function pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb default null)
returns table (attempt_id bigint, status text)
language plpgsql volatile security definer
set search_path = ''
as $$
begin
  if (select c.outcome from pgflight._complete_many(array[p_attempt_id], array[p_token], array[p_result],
                                                     pgflight._now()) c) <> 'succeeded' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step');
  end if;
  return query select p_attempt_id, 'succeeded'::text;
end
$$;
comment on function pgflight.complete_step(bigint, bigint, jsonb) is
  'Complete a held attempt with a result. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown.';
grant execute on function pgflight.complete_step(bigint, bigint, jsonb) to pgflight_worker;

commit;
