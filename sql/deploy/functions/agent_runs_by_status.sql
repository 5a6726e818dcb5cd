-- Deploy pgflight:functions/agent_runs_by_status
begin;
set local role pgflight_owner;

-- Read: the agent runs whose step ended with p_status (default succeeded), oldest first, after
-- agent run id p_after (keyset paging), at most p_limit. For pgflight export-dataset.
create or replace function pgflight.agent_runs_by_status(p_status text default 'succeeded', p_after bigint default 0,
                                              p_limit integer default 1000)
returns table (agent_run_id bigint, step_id bigint, run_id bigint, model text, system_prompt text,
               iterations integer, usd numeric, result jsonb)
language sql stable security definer
set search_path = pg_catalog, pg_temp
as $$
  select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.iterations, r.usd, a.result
    from pgflight.agent_runs r
    join pgflight.steps s on s.id = r.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   cross join (select pgflight._lane_workspaces('reader') as ids) ws  -- issue 13: the login's workspaces
   where a.status = p_status and r.id > p_after
     and (ws.ids is null or exists (select from pgflight.runs x where x.id = r.run_id and x.workspace_id = any (ws.ids)))
   order by r.id
   limit pgflight._check_limit(p_limit)  -- 22023 for a negative limit (issue 14)
$$;
comment on function pgflight.agent_runs_by_status(text, bigint, integer) is
  'Read: agent runs whose step status is p_status, keyset-paged by agent run id.';
grant execute on function pgflight.agent_runs_by_status(text, bigint, integer) to pgflight_operator, pgflight_reader;

commit;
