-- Deploy pgflight:functions/run_list_page

begin;

set local role pgflight_owner;

-- Read: one page of runs, newest first, after run id p_after (keyset paging: pass the last run_id
-- of the previous page; null for the first page), at most p_limit (1..500).
-- p_filters (all optional): key (idempotency key prefix), status (queued | running | waiting |
-- succeeded | failed | cancelled), recipe, workspace (name), since / until (timestamptz, on
-- created_at). state is the run's status with a running run told apart by its root step's latest
-- attempt: queued, running (leased) or waiting (children or an approval).
-- Cost: the queued / running / waiting filters start from the live attempts (partial indexes), so a
-- page costs what is live, not what is finished; the others walk runs by primary key backwards.
-- Tenancy: only the runs of the workspaces the login may read (like the views).
-- Errors: 22023 bad limit, unknown filter key, bad status or timestamp.
CREATE OR REPLACE FUNCTION pgflight.run_list_page(p_after bigint DEFAULT NULL::bigint, p_limit integer DEFAULT 50, p_filters jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(run_id bigint, workspace text, recipe text, status text, state text, idempotency_key text, submitted_by text, created_at timestamp with time zone, finished_at timestamp with time zone, duration_s double precision, usd numeric, root_step_id bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_filters jsonb := coalesce(p_filters, '{}');
  v_key text;
  v_status text;
  v_recipe text;
  v_ws bigint;
  v_since timestamptz;
  v_until timestamptz;
  v_live bigint[];
  v_bad text;
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  perform pgflight._require_limit('limit', p_limit, 500);
  if jsonb_typeof(v_filters) <> 'object' then
    raise exception using errcode = '22023', message = 'filters must be a JSON object',
      detail = format('got a JSON %s', jsonb_typeof(v_filters));
  end if;
  select k into v_bad from jsonb_object_keys(v_filters) k
   where k not in ('key', 'status', 'recipe', 'workspace', 'since', 'until') limit 1;
  if v_bad is not null then
    raise exception using errcode = '22023', message = format('unknown filter %L', v_bad),
      hint = 'Filters: key, status, recipe, workspace, since, until.';
  end if;
  v_key := nullif(v_filters ->> 'key', '');
  v_status := nullif(v_filters ->> 'status', '');
  v_recipe := nullif(v_filters ->> 'recipe', '');
  if v_status is not null and v_status not in ('queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled') then
    raise exception using errcode = '22023', message = format('unknown status %L', v_status),
      hint = 'Status: queued, running, waiting, succeeded, failed or cancelled.';
  end if;
  begin
    v_since := nullif(v_filters ->> 'since', '')::timestamptz;
    v_until := nullif(v_filters ->> 'until', '')::timestamptz;
  exception when others then
    raise exception using errcode = '22023', message = 'since and until must be timestamps',
      detail = sqlerrm, hint = 'Use ISO 8601, e.g. 2026-11-30T12:00:00Z.';
  end;
  if nullif(v_filters ->> 'workspace', '') is not null then
    select w.id into v_ws from pgflight.workspaces w where w.name = v_filters ->> 'workspace';
    if v_ws is null then
      return;
    end if;
  end if;

  -- live states: the runs whose root step's latest attempt is in that state, from the partial indexes
  if v_status = 'queued' then
    v_live := array(select a.run_id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
                     where a.status = 'queued' and s.parent_id is null);
  elsif v_status = 'running' then
    v_live := array(select a.run_id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
                     where a.status in ('claimed', 'running', 'cancel_requested') and s.parent_id is null);
  elsif v_status = 'waiting' then
    v_live := array(select a.run_id from pgflight.step_attempts a join pgflight.steps s on s.id = a.step_id
                     where a.status in ('awaiting_children', 'awaiting_approval') and s.parent_id is null);
  end if;

  return query
  select r.id, w.name, r.recipe, r.status,
         case when r.status <> 'running' then r.status
              when root.status = 'queued' then 'queued'
              when root.status in ('awaiting_children', 'awaiting_approval') then 'waiting'
              else 'running' end,
         r.idempotency_key, r.submitted_by, r.created_at, r.finished_at,
         extract(epoch from coalesce(r.finished_at, pgflight._now()) - r.created_at)::double precision,
         (select sum(c.usd) from pgflight.costs c where c.run_id = r.id),
         r.root_step_id
    from pgflight.runs r
    join pgflight.workspaces w on w.id = r.workspace_id
    left join lateral (
      -- the root step's latest attempt: its status tells queued from running from waiting
      select a.status from pgflight.steps s
        join pgflight.step_attempts a on a.step_id = s.id and a.attempt_no = s.last_attempt_no
       where s.id = r.root_step_id) root on true
   where (p_after is null or r.id < p_after)
     and (v_live is null or r.id = any(v_live))
     and (v_status is null or v_live is not null or r.status = v_status)
     and (v_ws is null or r.workspace_id = v_ws)
     and (v_lanes is null or r.workspace_id = any(v_lanes))
     and (v_recipe is null or r.recipe = v_recipe)
     and (v_key is null or starts_with(r.idempotency_key, v_key))
     and (v_since is null or r.created_at >= v_since)
     and (v_until is null or r.created_at < v_until)
   order by r.id desc
   limit p_limit;
end
$$;

COMMENT ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) IS 'Read: a page of runs newest first (keyset by run id), with state, duration (s) and cost (USD); filters key, status, recipe, workspace, since, until. Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.run_list_page(p_after bigint, p_limit integer, p_filters jsonb) TO pgflight_operator;

commit;
