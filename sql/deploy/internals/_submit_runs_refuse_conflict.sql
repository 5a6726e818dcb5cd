-- Deploy pgflight:internals/_submit_runs_refuse_conflict

begin;

set local role pgflight_owner;

-- The idempotency conflict of a submit_runs call, raised (ZF004): the first element that created
-- nothing (p_created: the elements that did) whose key names a run of another recipe or input: a
-- key seen before (in the database, or earlier in this call), or one that another transaction
-- created first (ON CONFLICT waited for it to commit). Returns when there is none.
CREATE OR REPLACE FUNCTION pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_bad record;
begin
  select e.ord::integer as ord, r.id, r.recipe, r.input_hash,
         e.value ->> 'recipe' as recipe_now,
         encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex') as hash_now,
         (select min(f.ord) from jsonb_array_elements(p_runs) with ordinality as f(value, ord)
           where f.value -> 'options' ->> 'idempotency_key' = r.idempotency_key)::integer as first_ord
    into v_bad
    from jsonb_array_elements(p_runs) with ordinality as e(value, ord)
    join pgflight.runs r on r.workspace_id = p_workspace_id
                        and r.idempotency_key = e.value -> 'options' ->> 'idempotency_key'
   where not exists (select from unnest(p_created) c(i) where c.i = e.ord)
     and (r.recipe <> e.value ->> 'recipe'
          or r.input_hash <> encode(sha256(convert_to(coalesce(e.value -> 'input', '{}')::text, 'UTF8')), 'hex'))
   order by e.ord
   limit 1;
  if found then
    raise exception using errcode = 'ZF004',
      message = format('submit_runs element %s: idempotency key %L was already used with a different input',
                       v_bad.ord, (p_runs -> (v_bad.ord - 1)) -> 'options' ->> 'idempotency_key'),
      detail = format('run %s has recipe %s and input sha256 %s%s; element %s has recipe %s and input sha256 %s',
                      v_bad.id, v_bad.recipe, v_bad.input_hash,
                      case when v_bad.first_ord < v_bad.ord and v_bad.first_ord = any (p_created)
                           then format(' (created by element %s of this call)', v_bad.first_ord) else '' end,
                      v_bad.ord, v_bad.recipe_now, v_bad.hash_now),
      hint = 'Use a new idempotency key for a different job, or resubmit the original input.';
  end if;
end
$$;

COMMENT ON FUNCTION pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]) IS 'Internal (submit_runs): ZF004 for the first element whose idempotency key names a run of another recipe or input; nothing otherwise.';

REVOKE ALL ON FUNCTION pgflight._submit_runs_refuse_conflict(p_runs jsonb, p_workspace_id bigint, p_created integer[]) FROM PUBLIC;

commit;
