-- Deploy pgflight:functions/cost_by_day
begin;
set local role pgflight_owner;

-- Read: model spend by workspace and UTC day over the last p_days days (1..92, today included):
-- model calls, input and output tokens, USD, and the day's cap (workspaces.daily_usd_cap, null: no
-- cap) with the USD reserved by calls in flight (from the workspace_day budget). Reads costs
-- through costs_at_idx: the cost is the window's calls, not the ledger. Only the workspaces the
-- login may read (issue 13). Errors: 22023 bad p_days.
create or replace function pgflight.cost_by_day(p_days integer default 14)
returns table (workspace text, day date, model_calls bigint, input_tokens bigint, output_tokens bigint,
               usd numeric, cap_usd numeric, reserved_usd numeric)
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_from date;
  v_lanes bigint[] := pgflight._lane_workspaces('reader');  -- null: every workspace
begin
  -- checked before the first day is computed: 2^31-1 days back is out of the date range (22008)
  perform pgflight._require_limit('days', p_days, 92);
  v_from := (pgflight._now() at time zone 'UTC')::date - (p_days - 1);
  return query
  with spend as (
    select c.workspace_id, (c.at at time zone 'UTC')::date as day, count(*) as calls,
           sum(c.input_tokens) as input_tokens, sum(c.output_tokens) as output_tokens, sum(c.usd) as usd
      from pgflight.costs c
     where c.at >= v_from::timestamp at time zone 'UTC'
       and (v_lanes is null or c.workspace_id = any(v_lanes))
     group by 1, 2
  )
  select w.name, sp.day, sp.calls, sp.input_tokens::bigint, sp.output_tokens::bigint, sp.usd,
         w.daily_usd_cap, b.reserved_usd
    from spend sp
    join pgflight.workspaces w on w.id = sp.workspace_id
    left join pgflight.budgets b on b.scope = 'workspace_day' and b.workspace_id = sp.workspace_id and b.day = sp.day
   order by sp.day desc, w.name;
end
$$;
comment on function pgflight.cost_by_day(integer) is
  'Read: model calls, tokens and USD by workspace and UTC day, with the daily cap. Errors: 22023.';
grant execute on function pgflight.cost_by_day(integer) to pgflight_reader, pgflight_operator;

commit;
