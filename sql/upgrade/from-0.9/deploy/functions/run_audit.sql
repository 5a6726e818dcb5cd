-- Deploy pgflight:functions/run_audit
begin;
set local role pgflight_owner;

-- The audit of one run, counted from the tables (never from a worker's memory), for reports and
-- for proving that nothing was lost or done twice (invariant 10):
--   steps, attempts; retries (attempts after a step's first); reclaimed_attempts (attempts ended
--   lease_expired: their worker died or stalled); stale_writes_rejected (stale_result_rejected
--   events); dead_letters (steps whose latest attempt is dead_letter); model_calls, input_tokens,
--   output_tokens, tokens (input + output + cache), usd (from costs); wall_time_s (seconds from
--   submission to the end, or to now while running); steps_succeeded; steps_unfinished (latest
--   attempt not terminal); steps_succeeded_twice (steps with more than one succeeded attempt:
--   0 unless a step was replayed: replay_from runs a succeeded step again).
-- Reads only, one snapshot (a stable function in one statement). Errors: ZF003 unknown run.
create or replace function pgflight.run_audit(p_run_id bigint)
returns table (run_id bigint, status text, steps bigint, attempts bigint, retries bigint,
               reclaimed_attempts bigint, stale_writes_rejected bigint, dead_letters bigint,
               model_calls bigint, input_tokens bigint, output_tokens bigint, tokens bigint,
               usd numeric, wall_time_s double precision, steps_succeeded bigint,
               steps_unfinished bigint, steps_succeeded_twice bigint)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- the lane on the run's workspace is a predicate of the one statement: a run outside it finds no
  -- row and answers exactly as an unknown run (one answer for what a login may not see)
  return query
  with per_step as (
    -- one row per step: its attempts by outcome and the status of its latest attempt
    select s.id,
           count(a.id) as attempts,
           count(a.id) filter (where a.attempt_no > 1) as retries,
           count(a.id) filter (where a.status = 'lease_expired') as reclaimed,
           count(a.id) filter (where a.status = 'succeeded') as succeeded,
           max(a.status) filter (where a.attempt_no = s.last_attempt_no) as latest
      from pgflight.steps s
      join pgflight.step_attempts a on a.step_id = s.id
     where s.run_id = p_run_id
     group by s.id
  ), spend as (
    -- costs has its own run index: summed apart so the join above does not repeat its rows
    select count(*) as calls, coalesce(sum(c.input_tokens), 0) as input_tokens,
           coalesce(sum(c.output_tokens), 0) as output_tokens,
           coalesce(sum(c.input_tokens + c.output_tokens + c.cache_creation_tokens + c.cache_read_tokens), 0)
             as tokens,
           coalesce(sum(c.usd), 0) as usd
      from pgflight.costs c where c.run_id = p_run_id
  )
  select r.id, r.status,
         (select count(*) from per_step),
         (select coalesce(sum(p.attempts), 0)::bigint from per_step p),
         (select coalesce(sum(p.retries), 0)::bigint from per_step p),
         (select coalesce(sum(p.reclaimed), 0)::bigint from per_step p),
         (select count(*) from pgflight.events e
           where e.run_id = r.id and e.reason = 'stale_result_rejected'),
         (select count(*) from per_step p where p.latest = 'dead_letter'),
         sp.calls, sp.input_tokens::bigint, sp.output_tokens::bigint, sp.tokens::bigint, sp.usd,
         extract(epoch from coalesce(r.finished_at, pgflight._now()) - r.created_at)::double precision,
         (select count(*) from per_step p where p.latest = 'succeeded'),
         (select count(*) from per_step p
           where p.latest not in ('succeeded', 'dead_letter', 'cancelled')),
         (select count(*) from per_step p where p.succeeded > 1)
    from pgflight.runs r, spend sp
   where r.id = p_run_id and pgflight._may('reader', r.workspace_id);
  if not found then
    raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id),
      hint = 'List runs with pgflight runs.';
  end if;
end
$$;
comment on function pgflight.run_audit(bigint) is
  'Audit of a run from the tables: steps, attempts, retries, reclaimed attempts, stale writes '
  'rejected, dead letters, model calls, tokens, USD, wall time (s), and the succeeded / unfinished / '
  'succeeded-twice step counts. Errors: ZF003 unknown run.';
grant execute on function pgflight.run_audit(bigint) to pgflight_operator, pgflight_reader, pgflight_worker;

commit;
