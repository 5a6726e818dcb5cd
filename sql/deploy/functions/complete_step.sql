-- Deploy pgflight:functions/complete_step
-- requires: functions/_lifecycle
begin;
set local role pgflight_owner;

-- The core of a successful completion, shared by complete_step and complete_batch. Returns
-- 'succeeded', or 'lease_lost' / 'cancelled' when the attempt is not leased with this token (then
-- nothing changed). Compare-and-swap on (id, token, leased status): of a completion racing a
-- reclaim or a cancel, whichever locks the row first wins and the other sees it changed.
create function pgflight._complete(p_attempt_id bigint, p_token bigint, p_result jsonb, p_now timestamptz)
returns text
language plpgsql volatile
set search_path = ''
as $$
declare
  v_row record;
  v_status text;
begin
  update pgflight.step_attempts a
     set status = 'succeeded', finished_at = p_now, result = p_result,
         started_at = coalesce(a.started_at, a.claimed_at)
    from (select o.id, o.status from pgflight.step_attempts o
           where o.id = p_attempt_id and o.fencing_token = p_token and o.status in ('claimed', 'running')
             for update) old
   where a.id = old.id
  returning a.id, a.step_id, a.run_id, a.worker_id, old.status as old_status into v_row;
  if not found then
    select a.status into v_status from pgflight.step_attempts a
     where a.id = p_attempt_id and a.fencing_token = p_token;
    return case when v_status in ('cancel_requested', 'cancelled') then 'cancelled' else 'lease_lost' end;
  end if;
  insert into pgflight.events (at, run_id, step_id, attempt_id, from_status, to_status, worker_id, reason)
  values (p_now, v_row.run_id, v_row.step_id, v_row.id, v_row.old_status, 'succeeded', v_row.worker_id, 'succeeded');
  perform pgflight._step_finished(v_row.step_id, 'succeeded');
  return 'succeeded';
end
$$;
comment on function pgflight._complete(bigint, bigint, jsonb, timestamptz) is
  'Internal: complete one attempt; returns succeeded | lease_lost | cancelled.';

-- Complete an attempt this caller holds, storing p_result (any JSON, or null). The step becomes
-- succeeded; its parent is poked; a root ends its run. Errors: ZF001 lease lost (reclaimed,
-- superseded token, already finished), ZF002 cancelled, ZF003 unknown attempt. A rejected call
-- changes nothing; record it with record_stale_write, or use complete_batch, which records it.
create function pgflight.complete_step(p_attempt_id bigint, p_token bigint, p_result jsonb default null)
returns table (attempt_id bigint, status text)
language plpgsql volatile security definer
set search_path = ''
as $$
begin
  if pgflight._complete(p_attempt_id, p_token, p_result, pgflight._now()) <> 'succeeded' then
    perform pgflight._reject_write(p_attempt_id, p_token, 'complete_step');
  end if;
  return query select p_attempt_id, 'succeeded'::text;
end
$$;
comment on function pgflight.complete_step(bigint, bigint, jsonb) is
  'Complete a held attempt with a result. Errors: ZF001 lease lost, ZF002 cancelled, ZF003 unknown.';

-- Complete many attempts in one transaction (the worker's batched hot path). Parallel arrays.
-- Never raises for a stale attempt: it reports outcome lease_lost or cancelled for that row,
-- records a stale_result_rejected event, and completes the others.
-- Errors: 22023 arrays of different lengths.
create function pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[])
returns table (attempt_id bigint, outcome text)
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_now timestamptz := pgflight._now();
  v_i integer;
  v_outcome text;
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  for v_i in 1 .. coalesce(cardinality(p_attempt_ids), 0) loop
    v_outcome := pgflight._complete(p_attempt_ids[v_i], p_tokens[v_i], p_results[v_i], v_now);
    if v_outcome <> 'succeeded' then
      perform pgflight._record_stale(p_attempt_ids[v_i], p_tokens[v_i], 'complete');
    end if;
    attempt_id := p_attempt_ids[v_i];
    outcome := v_outcome;
    return next;
  end loop;
end
$$;
comment on function pgflight.complete_batch(bigint[], bigint[], jsonb[]) is
  'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled. Errors: 22023.';

grant execute on function pgflight.complete_step(bigint, bigint, jsonb),
                          pgflight.complete_batch(bigint[], bigint[], jsonb[]) to pgflight_worker;

commit;
