-- Deploy pgflight:internals/_complete_refusing

begin;

set local role pgflight_owner;

-- complete_batch's slow path: p_errors[i] not null means result i cannot be
-- stored (refused by the jsonb parser, too large). That attempt, if still held with its token,
-- fails at once and for good (_fail_attempt, not retryable: dead letter, reason result_refused,
-- the real error kept); the others complete through _complete_many as usual. Outcome per row,
-- in the order given: succeeded | result_refused | lease_lost | cancelled (stale rows logged).
-- Lock order (docs/locking.md): a refused row ends its step, and that end may cancel a subtree (a
-- waiting fail-fast ancestor's, or its own children's). So first, for each refused row still held
-- with its token (id order), the live attempts of that subtree, deepest first then id
-- (_lock_cascade, as fail_step); then every attempt of the batch, in id order; only then any
-- steps row. Before, the cascade locked a sibling's attempt after the parent's steps row, against
-- that sibling's completion (its attempt, then the parent's row): 40P01.
CREATE OR REPLACE FUNCTION pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]) RETURNS TABLE(attempt_id bigint, outcome text)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_n integer := coalesce(cardinality(p_attempt_ids), 0);
  v_out text[] := array_fill(null::text, array[greatest(v_n, 1)]);
  v_rest integer[];
  v_i integer;
  v_status text;
  v_row record;
begin
  -- Only attempts held by this login's own workers are written: another login's attempt, even
  -- with its current token (a leaked one), is lease_lost for its row alone (_complete_many's
  -- answer for it), the rest of the batch answered as usual
  for v_row in
    select distinct a.id from pgflight.step_attempts a
      join unnest(p_attempt_ids, p_tokens, p_errors) as q(id, token, error)
        on q.id = a.id and q.token = a.fencing_token
     where q.error is not null and a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
  loop
    perform pgflight._lock_cascade(v_row.id, false);
  end loop;
  perform from (
    select a.id from pgflight.step_attempts a
      join unnest(p_attempt_ids, p_tokens) as q(id, token) on q.id = a.id and q.token = a.fencing_token
     where a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     order by a.id
       for update of a) l;
  for v_i in 1 .. v_n loop
    continue when p_errors[v_i] is null;
    select a.status into v_status from pgflight.step_attempts a
     where a.id = p_attempt_ids[v_i] and a.fencing_token = p_tokens[v_i] and a.status in ('claimed', 'running')
       and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user);
    if found then
      perform pgflight._fail_attempt(p_attempt_ids[v_i], v_status, 'failed', p_errors[v_i], false, null,
                                     'result_refused');
      v_out[v_i] := 'result_refused';
    end if;
  end loop;
  select array_agg(q.ord order by q.ord) into v_rest
    from generate_series(1, v_n) as q(ord) where v_out[q.ord] is null;
  if v_rest is not null then
    v_i := 0;
    for v_row in
      select c.outcome from pgflight._complete_many(
               (select array_agg(p_attempt_ids[r] order by k) from unnest(v_rest) with ordinality as u(r, k)),
               (select array_agg(p_tokens[r] order by k) from unnest(v_rest) with ordinality as u(r, k)),
               (select array_agg(case when p_errors[r] is null then p_results[r] end order by k)
                  from unnest(v_rest) with ordinality as u(r, k)),
               pgflight._now()) c
    loop
      v_i := v_i + 1;
      v_out[v_rest[v_i]] := v_row.outcome;
      if v_row.outcome <> 'succeeded' then
        perform pgflight._record_stale(p_attempt_ids[v_rest[v_i]], p_tokens[v_rest[v_i]], 'complete');
      end if;
    end loop;
  end if;
  return query select p_attempt_ids[q.ord], v_out[q.ord] from generate_series(1, v_n) as q(ord);
end
$$;

COMMENT ON FUNCTION pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]) IS 'Internal: complete a batch in which some results cannot be stored: those attempts fail alone (result_refused), the others complete.';

REVOKE ALL ON FUNCTION pgflight._complete_refusing(p_attempt_ids bigint[], p_tokens bigint[], p_results jsonb[], p_errors jsonb[]) FROM PUBLIC;

commit;
