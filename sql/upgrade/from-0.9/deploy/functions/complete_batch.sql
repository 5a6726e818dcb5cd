-- Deploy pgflight:functions/complete_batch
begin;
set local role pgflight_owner;

-- Complete many attempts in one transaction (the worker's batched hot path). Parallel arrays.
-- Never raises for a stale attempt: it reports outcome lease_lost or cancelled for that row,
-- records a stale_result_rejected event, and completes the others.
-- A result that cannot be stored poisons only its own row (issue 14 case 2): a result over
-- settings.max_result_bytes (bytes of its JSON text; the one cap on results, issue 18: before,
-- a second whole-batch check raised ZF005 and refused the neighbours too), a result nested deeper
-- than settings.max_json_depth (only a result of more than 2 * max_json_depth + 1 bytes can be,
-- so a small one costs no walk), or — with the text[]
-- overload, which a worker in any language can use to send results as JSON text — a text
-- PostgreSQL refuses as jsonb (a bare NaN or Infinity, \u0000, malformed JSON). That attempt
-- fails at once, not retryable (dead letter, reason result_refused, its error the real one with
-- SQLSTATE, ZF005 for the size), outcome 'result_refused'; the others complete. The check is set-based;
-- the text[] overload casts the whole array in one statement and parses element by element only
-- when that cast fails.
-- An attempt given with a token that is not its current one, or unknown, answers lease_lost; so does
-- an attempt no worker of this login holds, whatever token is sent (another login's, another
-- workspace's: a leaked token): lease_lost for that row alone, nothing written to it, never its
-- status, and the other rows of the batch are answered as usual. Set-based: _complete_many locks
-- only attempts held by this login's workers and reads back the others' outcomes in one statement;
-- no query per row.
-- Errors: 22023 arrays of different lengths, a NULL element of the attempt ids or tokens or an
-- array of more than one dimension (the whole batch refused).
create or replace function pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[])
returns table (attempt_id bigint, outcome text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_i integer := 0;
  v_max bigint;
  v_depth integer;
  v_errors jsonb[];
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  -- a NULL never matches a token (the fence's rule): the whole batch is refused before anything is
  -- read. One expression, no query (array_position searches one-dimensional arrays only: a deeper
  -- one is refused as such first)
  if (case when array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then true
           else array_position(p_attempt_ids, null) is not null or array_position(p_tokens, null) is not null end) then
    perform pgflight._refuse_fence_arrays('complete_batch', p_attempt_ids, p_tokens);
  end if;
  -- issue 18: one cap on results, settings.max_result_bytes, checked row by row. The hot path: one
  -- set-based size check (the cap read in it); a refused row goes through _complete_refusing
  -- and the depth cap, settings.max_json_depth, walked only for a result long enough to exceed it
  if exists (select from unnest(p_results) as r(v), pgflight.settings s,
                     lateral (select octet_length(r.v::text) as n) l
              where l.n > s.max_result_bytes
                 or (l.n > 2 * s.max_json_depth + 1 and pgflight._json_too_deep(r.v, s.max_json_depth))) then
    select s.max_result_bytes, s.max_json_depth into v_max, v_depth from pgflight.settings s;
    select array_agg(case when octet_length(r.v::text) > v_max
                          then jsonb_build_object('message', format('result too large: %s bytes; the cap is %s bytes (settings.max_result_bytes)',
                                                                    octet_length(r.v::text), v_max),
                                                  'sqlstate', 'ZF005')
                          when pgflight._json_too_deep(r.v, v_depth)
                          then jsonb_build_object('message', format('result nests %s levels deep; the cap is %s (settings.max_json_depth)',
                                                                    coalesce(pgflight._json_depth(r.v)::text, 'more than ' || v_depth), v_depth),
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
      -- logged only for an attempt of this login's own workers (_record_stale checks it)
      perform pgflight._record_stale(attempt_id, p_tokens[v_i], 'complete');
    end if;
    return next;
  end loop;
end
$$;
comment on function pgflight.complete_batch(bigint[], bigint[], jsonb[]) is
  'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled | result_refused (its result '
  'refused: over settings.max_result_bytes or nested deeper than settings.max_json_depth; that step '
  'dead-letters alone); an attempt not held by the login''s own workers is lease_lost for its row alone. '
  'Errors: 22023 (lengths differ, a NULL).';
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
  v_depth integer := (select s.max_json_depth from pgflight.settings s);
begin
  if coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_tokens), 0)
     or coalesce(cardinality(p_attempt_ids), 0) <> coalesce(cardinality(p_results), 0) then
    raise exception using errcode = '22023', message = 'attempt ids, tokens and results differ in length',
      hint = 'Pass one token and one result per attempt id, in the same order.';
  end if;
  -- a NULL never matches a token (the fence's rule): the whole batch is refused before anything is
  -- read. One expression, no query (array_position searches one-dimensional arrays only: a deeper
  -- one is refused as such first)
  if (case when array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then true
           else array_position(p_attempt_ids, null) is not null or array_position(p_tokens, null) is not null end) then
    perform pgflight._refuse_fence_arrays('complete_batch', p_attempt_ids, p_tokens);
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
      elsif pgflight._json_too_deep(v_json[v_i], v_depth) then
        v_errors[v_i] := jsonb_build_object('message', format('result nests %s levels deep; the cap is %s (settings.max_json_depth)',
                                                              coalesce(pgflight._json_depth(v_json[v_i])::text, 'more than ' || v_depth), v_depth), 'sqlstate', 'ZF005');
      end if;
    exception when others then
      v_errors[v_i] := jsonb_build_object('message', 'result refused by PostgreSQL: ' || sqlerrm, 'sqlstate', sqlstate);
    end;
  end loop;
  return query select * from pgflight._complete_refusing(p_attempt_ids, p_tokens, v_json, v_errors);
end
$$;
comment on function pgflight.complete_batch(bigint[], bigint[], text[]) is
  'Complete many held attempts, results as JSON text; an element PostgreSQL refuses (NaN, \u0000, too large, too deep) '
  'fails only its own step (outcome failed); an attempt not held by the login''s own workers is lease_lost '
  'for its row alone. Errors: 22023 (lengths differ, a NULL).';
grant execute on function pgflight.complete_batch(bigint[], bigint[], text[]) to pgflight_worker;

commit;
