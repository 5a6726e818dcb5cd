-- Deploy pgflight:functions/children_results
begin;
set local role pgflight_owner;

-- The children of a step in key order, each with its current status, result and last error, for
-- a woken parent to read. Any caller may read: results are not secret from the tree's worker. A
-- step outside the login's workspaces answers exactly as a step that does not exist: no row (one
-- answer for what a login may not see; docs/security.md).
create or replace function pgflight.children_results(p_step_id bigint)
returns table (step_key text, step_id bigint, recipe text, status text, attempt_no integer,
               result jsonb, error jsonb)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- the lane on the step's workspace, in the one statement: outside it, no row, as for an unknown step
  return query
    select s.step_key, s.id, s.recipe, a.status, a.attempt_no, a.result, a.error
      from pgflight.steps s
      join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
     where s.parent_id = p_step_id
       and pgflight._may('reader', (select r.workspace_id from pgflight.steps p join pgflight.runs r on r.id = p.run_id
                                     where p.id = p_step_id))
     order by s.step_key;
end
$$;
comment on function pgflight.children_results(bigint) is
  'Children of a step in key order with status, result and error of their latest attempt.';
grant execute on function pgflight.children_results(bigint) to pgflight_worker, pgflight_operator, pgflight_reader;

commit;
