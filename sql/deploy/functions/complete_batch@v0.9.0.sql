-- Deploy pgflight:functions/complete_batch
begin;
set local role pgflight_owner;

-- Complete many attempts in one transaction (the worker's batched hot path). Parallel arrays.
-- Never raises for a stale attempt: it reports outcome lease_lost or cancelled for that row,
-- records a stale_result_rejected event, and completes the others.
-- A result that cannot be stored poisons only its own row (issue 14 case 2): a result over
-- settings.max_result_bytes (bytes of its JSON text; the one cap on results, issue 18: before,
-- a second whole-batch check raised ZF005 and refused the neighbours too), or — with the text[]
-- overload, which a worker in any language can use to send results as JSON text — a text
-- PostgreSQL refuses as jsonb (a bare NaN or Infinity, \u0000, malformed JSON). That attempt
-- fails at once, not retryable (dead letter, reason result_refused, its error the real one with
-- SQLSTATE, ZF005 for the size), outcome 'failed'; the others complete. The check is set-based;
-- the text[] overload casts the whole array in one statement and parses element by element only
-- when that cast fails.
-- Errors: 22023 arrays of different lengths, ZF012 the current token of an attempt held by
-- another login's worker (issue 13).
create or replace function pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[])
returns table (attempt_id bigint, outcome text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_i integer := 0;
  v_max bigint;
  v_errors jsonb[];
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  -- issue 18: one cap on results, settings.max_result_bytes, checked row by row. The hot path: one
  -- set-based size check (the cap read in it); a refused row goes through _complete_refusing
  if exists (select from unnest(p_results) as r(v)
              where octet_length(r.v::text) > (select s.max_result_bytes from pgflight.settings s)) then
    select s.max_result_bytes into v_max from pgflight.settings s;
    select array_agg(case when octet_length(r.v::text) > v_max
                          then jsonb_build_object('message', format('result too large: %s bytes; the cap is %s bytes (settings.max_result_bytes)',
                                                                    octet_length(r.v::text), v_max),
                                                  'sqlstate', 'ZF005')
                     end order by r.ord)
      into v_errors
      from unnest(p_results) with ordinality as r(v, ord);
    return query select * from pgflight._complete_refusing(p_attempt_ids, p_tokens, p_results, v_errors);
    return;
  end if;
  -- outcomes come back in the order given, so the i-th row goes with the i-th token
  for attempt_id, outcome in
    select c.attempt_id, c.outcome from pgflight._complete_many(p_attempt_ids, p_tokens, p_results, pgflight._now()) c
  loop
    v_i := v_i + 1;
    if outcome <> 'succeeded' then
      -- a current token of another login's attempt is a leaked one: ZF012, the whole batch undone
      perform pgflight._require_own_attempt(attempt_id, p_tokens[v_i], 'complete_batch');
      perform pgflight._record_stale(attempt_id, p_tokens[v_i], 'complete');
    end if;
    return next;
  end loop;
end
$$;
comment on function pgflight.complete_batch(bigint[], bigint[], jsonb[]) is
  'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled | failed (its result '
  'refused: over settings.max_result_bytes; that step dead-letters alone). Errors: 22023, ZF012.';
grant execute on function pgflight.complete_batch(bigint[], bigint[], jsonb[]) to pgflight_worker;

-- The same with each result as JSON text: an element PostgreSQL refuses (NaN, \u0000, malformed)
-- fails its own attempt with the parser's error; the others complete.
create or replace function pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[])
returns table (attempt_id bigint, outcome text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_json jsonb[];
  v_errors jsonb[];
  v_i integer;
  v_max bigint := (select s.max_result_bytes from pgflight.settings s);
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  begin
    v_json := p_results::jsonb[];  -- one cast for the whole batch
  exception when others then
    v_json := null;
  end;
  if v_json is not null then
    return query select * from pgflight.complete_batch(p_attempt_ids, p_tokens, v_json);
    return;
  end if;
  -- the slow path: element by element, each refusal kept with its SQLSTATE and message
  v_json := array_fill(null::jsonb, array[cardinality(p_results)]);
  v_errors := array_fill(null::jsonb, array[cardinality(p_results)]);
  for v_i in 1 .. cardinality(p_results) loop
    begin
      v_json[v_i] := p_results[v_i]::jsonb;
      if octet_length(v_json[v_i]::text) > v_max then
        v_errors[v_i] := jsonb_build_object('message', format('result too large: %s bytes; the cap is %s bytes (settings.max_result_bytes)',
                                                              octet_length(v_json[v_i]::text), v_max), 'sqlstate', 'ZF005');
      end if;
    exception when others then
      v_errors[v_i] := jsonb_build_object('message', 'result refused by PostgreSQL: ' || sqlerrm, 'sqlstate', sqlstate);
    end;
  end loop;
  return query select * from pgflight._complete_refusing(p_attempt_ids, p_tokens, v_json, v_errors);
end
$$;
comment on function pgflight.complete_batch(bigint[], bigint[], text[]) is
  'Complete many held attempts, results as JSON text; an element PostgreSQL refuses (NaN, \u0000, too large) '
  'fails only its own step (outcome failed). Errors: 22023, ZF012.';
grant execute on function pgflight.complete_batch(bigint[], bigint[], text[]) to pgflight_worker;

commit;
