-- Deploy pgflight:functions/complete_batch

begin;

set local role pgflight_owner;

-- The same with each result as JSON text: an element PostgreSQL refuses (NaN, \u0000, malformed)
-- fails its own attempt with the parser's error; the others complete.
CREATE OR REPLACE FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
  -- one cap on results, settings.max_result_bytes, checked row by row. The hot path: one
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

COMMENT ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) IS 'Complete many held attempts; per row outcome succeeded | lease_lost | cancelled | result_refused (its result refused: over settings.max_result_bytes or nested deeper than settings.max_json_depth; that step dead-letters alone); an attempt not held by the login''s own workers is lease_lost for its row alone. Errors: 22023 (lengths differ, a NULL).';

CREATE OR REPLACE FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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

COMMENT ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) IS 'Complete many held attempts, results as JSON text; an element PostgreSQL refuses (NaN, \u0000, too large, too deep) fails only its own step (outcome failed); an attempt not held by the login''s own workers is lease_lost for its row alone. Errors: 22023 (lengths differ, a NULL).';

REVOKE ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[]) TO pgflight_worker;

REVOKE ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.complete_batch(p_attempt_ids bigint[], p_tokens bigint[], p_results text[]) TO pgflight_worker;

commit;
