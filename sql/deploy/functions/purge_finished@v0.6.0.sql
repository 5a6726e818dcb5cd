-- Deploy pgflight:functions/purge_finished
begin;
set local role pgflight_owner;

-- Sweep: delete runs finished more than p_older_than_s seconds ago (default
-- settings.purge_after_s), with their steps, attempts, gates and agent runs (one set-based DELETE,
-- the rest by cascade), at most p_limit runs per call (default 1,000: one bounded transaction,
-- about a quarter of a second); sweep_loop calls it every pass while a batch is full, so there is
-- no cap per hour or day. Returns the number of runs deleted. Issue 18: the firehose rows are not
-- deleted row by row here any more: their events go with their day partition (maintain_partitions,
-- settings.events_keep_s), their traces and costs with their agent-run-id partition once every
-- agent run in it is purged (maintain_partitions, tables/firehose_by_agent_run).
create or replace function pgflight.purge_finished(p_older_than_s double precision default null, p_limit integer default 1000)
returns integer
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ids bigint[];
  v_age double precision;
begin
  perform pgflight._require_lane('operator', null, 'purge_finished');  -- issue 13: acts on every workspace
  perform pgflight._check_limit(p_limit);  -- 22023 for a negative limit (issue 14)
  if p_older_than_s is not null then
    perform pgflight._check_arg('older_than_s', p_older_than_s, 0, 3153600000);
  end if;
  v_age := coalesce(p_older_than_s, (select s.purge_after_s from pgflight.settings s));
  select array_agg(r.id) into v_ids from (
    -- a run finishes after it is created, so created_at bounds the scan (runs_created_idx)
    select r.id from pgflight.runs r
     where r.created_at < (select pgflight._now()) - make_interval(secs => v_age)
       and r.finished_at < (select pgflight._now()) - make_interval(secs => v_age)
       -- a cancelled run may still have an attempt whose worker has not acknowledged: keep it
       and not exists (select from pgflight.steps s
                          join pgflight.step_attempts a on a.step_id = s.id
                        where s.run_id = r.id
                          and a.status in ('queued', 'claimed', 'running', 'cancel_requested',
                                           'awaiting_children', 'awaiting_approval'))
     order by r.created_at limit p_limit
       for update skip locked) r;
  if v_ids is null then
    return 0;
  end if;
  delete from pgflight.runs r where r.id = any (v_ids);
  return cardinality(v_ids);
end
$$;
comment on function pgflight.purge_finished(double precision, integer) is
  'Sweep: delete finished runs older than p_older_than_s seconds with all their rows; returns the count.';
grant execute on function pgflight.purge_finished(double precision, integer) to pgflight_operator;

commit;
