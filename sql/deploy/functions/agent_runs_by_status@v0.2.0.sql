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
set search_path = ''
as $$
  select r.id, r.step_id, r.run_id, r.model, r.system_prompt, r.iterations, r.usd, a.result
    from pgflight.agent_runs r
    join pgflight.steps s on s.id = r.step_id
    join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
   where a.status = p_status and r.id > p_after
   order by r.id
   limit p_limit
$$;
comment on function pgflight.agent_runs_by_status(text, bigint, integer) is
  'Read: agent runs whose step status is p_status, keyset-paged by agent run id.';
grant execute on function pgflight.agent_runs_by_status(text, bigint, integer) to pgflight_operator, pgflight_reader;

commit;
