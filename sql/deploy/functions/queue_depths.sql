-- Deploy pgflight:functions/queue_depths

begin;

set local role pgflight_owner;

-- Read: the live work by workspace and recipe: ready (queued, available now), delayed (queued for
-- later: backoff or not_before), in_flight (leased), parked (awaiting children or an approval), and
-- the age in seconds of the oldest ready attempt (0 when none). Reads only the partial indexes on
-- live states: its cost follows the live work, whatever the history holds. Only the workspaces the
-- login may read (filtered like the views).
CREATE OR REPLACE FUNCTION pgflight.queue_depths() RETURNS TABLE(workspace text, recipe text, ready bigint, delayed bigint, in_flight bigint, parked bigint, oldest_ready_s double precision)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  with live as (
    -- one scan per live state, each on its own partial index
    select a.run_id, a.recipe, 'queued' as k, a.available_after from pgflight.step_attempts a
     where a.status = 'queued'
    union all
    select a.run_id, a.recipe, 'leased', null from pgflight.step_attempts a
     where a.status in ('claimed', 'running', 'cancel_requested')
    union all
    select a.run_id, a.recipe, 'parked', null from pgflight.step_attempts a
     where a.status in ('awaiting_children', 'awaiting_approval')
  ), now_ as (select pgflight._now() as t)
  select w.name, l.recipe,
         count(*) filter (where l.k = 'queued' and l.available_after <= n.t),
         count(*) filter (where l.k = 'queued' and l.available_after > n.t),
         count(*) filter (where l.k = 'leased'),
         count(*) filter (where l.k = 'parked'),
         coalesce(extract(epoch from n.t - min(l.available_after) filter (
           where l.k = 'queued' and l.available_after <= n.t)), 0)::double precision
    from live l
    cross join now_ n
    join pgflight.runs r on r.id = l.run_id
    join pgflight.workspaces w on w.id = r.workspace_id
   where (select pgflight._lane_workspaces('reader')) is null
      or r.workspace_id = any (coalesce((select pgflight._lane_workspaces('reader')), '{}'))
   group by w.name, l.recipe, n.t
   order by w.name, l.recipe
$$;

COMMENT ON FUNCTION pgflight.queue_depths() IS 'Read: live work by workspace and recipe: ready, delayed, in_flight, parked, and the oldest ready age (s).';

REVOKE ALL ON FUNCTION pgflight.queue_depths() FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.queue_depths() TO pgflight_reader;
GRANT ALL ON FUNCTION pgflight.queue_depths() TO pgflight_operator;

commit;
