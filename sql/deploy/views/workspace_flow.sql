-- Deploy pgflight:views/workspace_flow
begin;
set local role pgflight_owner;

-- Each workspace's flow control (issue 15) with its leased, queued and parked counts: what
-- `pgflight show` and `pgflight workspace` print.
-- Issue 13: security_barrier, only the reading login's workspaces (as views/run_list).
create or replace view pgflight.workspace_flow with (security_barrier) as
select w.name as workspace, l.max_in_flight, coalesce(l.share, 1) as share, l.starts_per_s, l.burst,
       l.model_tokens_per_min, l.paused_at, l.paused_by,
       (select count(*) from pgflight.step_attempts a
         where a.workspace_id = w.id and a.status in ('claimed', 'running', 'cancel_requested')) as in_flight,
       (select count(*) from pgflight.step_attempts a where a.workspace_id = w.id and a.status = 'queued') as queued,
       (select count(*) from pgflight.step_attempts a
         where a.workspace_id = w.id and a.status = 'queued' and a.available_after = 'infinity') as parked
  from pgflight.workspaces w
  left join pgflight.workspace_limits l on l.workspace_id = w.id
 where (select pgflight._lane_workspaces('reader')) is null
    or w.id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}'));
comment on view pgflight.workspace_flow is
  'Per workspace: max_in_flight, share, starts_per_s/burst, model_tokens_per_min, pause; in_flight '
  '(leased attempts), queued, parked (queued behind a full concurrency key).';

grant select on pgflight.workspace_flow to pgflight_reader, pgflight_operator;

commit;
