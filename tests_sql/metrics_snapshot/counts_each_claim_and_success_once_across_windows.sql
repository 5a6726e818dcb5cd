-- metrics_snapshot: an exporter catching up in small windows counts every started claim and
-- every success from running exactly once, also the claim of an attempt whose success comes
-- after the window that holds its claim (both in one attempt row, read by its latest id).
begin;
\ir ../_helpers.psql
select plan(4);

-- ids in this order: claim a, claim b, success a, success b (each submit's queued id comes before)
select pgflight.submit_run('test', 'r', '{}');
select pgflight.submit_run('test', 'r', '{}');
select attempt_id as a, fencing_token as ta from pgflight.claim_batch(:w1, 1, 30, array['r'], '{"start": true}') \gset
select attempt_id as b, fencing_token as tb from pgflight.claim_batch(:w1, 1, 30, array['r'], '{"start": true}') \gset
select pgflight.complete_step(:a, :ta);
select pgflight.complete_step(:b, :tb);
select is((select count(*) from pgflight.step_attempts
            where claim_event_id < finish_event_id and id in (:a, :b)), 2::bigint,
  'the claims and successes are the attempts'' ids, no events rows');

-- the counts summed over the calls of an exporter that starts at 0 and passes each cursor back
create function pg_temp.catch_up(p_max integer) returns table (claims float8, completions float8, calls integer)
language plpgsql as $$
declare
  v_cursor bigint := 0;
  v_next bigint;
  v_claims float8;
  v_completions float8;
begin
  claims := 0; completions := 0; calls := 0;
  loop
    calls := calls + 1;
    select coalesce(sum(m.value) filter (where m.labels ->> 'kind' = 'claims'), 0),
           coalesce(sum(m.value) filter (where m.labels ->> 'kind' = 'completions'), 0),
           max(m.value) filter (where m.metric = 'events_cursor')::bigint
      into v_claims, v_completions, v_next
      from pgflight.metrics_snapshot(v_cursor, p_max) m where m.metric in ('events_delta', 'events_cursor');
    claims := claims + v_claims;
    completions := completions + v_completions;
    exit when v_next = v_cursor or calls > 20;
    v_cursor := v_next;
  end loop;
  return next;
end
$$;

select is((select (c.claims, c.completions)::text from pg_temp.catch_up(100000) c), '(2,2)',
  'one call: two claims, two successes');
select is((select (c.claims, c.completions)::text from pg_temp.catch_up(1) c), '(2,2)',
  'one id a call: each claim and success once, the claim of a before the window of its success');
select is((select (c.claims, c.completions)::text from pg_temp.catch_up(2) c), '(2,2)',
  'two ids a call: the same');
select * from finish();
rollback;
