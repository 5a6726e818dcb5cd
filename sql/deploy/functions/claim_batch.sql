-- Deploy pgflight:functions/claim_batch

begin;

set local role pgflight_owner;

-- Lease up to p_batch_size ready attempts to a worker: fairly across workspaces (served in turn,
-- weighted by share), highest priority first inside a workspace, within the in-flight caps,
-- concurrency keys, rate limits and pauses (how, at the head of internals/_claim_fair).
-- Each claimed attempt gets a fresh fencing token (a global sequence, so tokens strictly
-- increase) that every later write must carry, and a lease of the step's lease_s, else p_lease_s
-- seconds, stored on the attempt so heartbeat and reclaim never recompute it from configuration
-- (C16). First reclaims at most settings.reclaim_in_claim expired leases, so recovery does not
-- wait for cron (a reclaimed row that raises ends alone); at most once a second per
-- session (the reclaim's pick reads every live lease), except while each reclaim takes
-- its whole limit (a crash being drained). p_batch_size 1 to 100000,
-- p_lease_s 0.001 to 604800. p_recipes limits the recipes (null: any). options: start (boolean, default
-- false): the attempts go straight to running, as if start_step had been called, which saves the
-- worker one round trip and one commit per step.
-- Locking: FOR UPDATE SKIP LOCKED on the ready rows, so concurrent claimers never block on or
-- share a row; try-locks (SKIP LOCKED) on the caps' stripes, rate-limited workspaces and recipes
-- and concurrency keys, so no claim waits for another, but for a concurrency key's row that
-- another claimer created and has not committed (see internals/_claim_fair); the worker's row
-- is locked FOR SHARE (below).
-- Errors: 22023 bad batch size or lease, ZF005 batch size or lease over settings.max_batch_size /
-- max_lease_s, ZF010 unknown or stopped worker or one of another login. Claims only steps of the
-- workspaces the login has the worker lane on (docs/security.md#tenancy).
--
-- The fast path (server CPU per step): when the call has exactly one ready lane (one
-- workspace with queued work, or with p_recipes one recipe of one workspace), no global in-flight
-- cap, no recipe limit, and that workspace has no cap, rate limit or pause, the fair claim has
-- nothing to decide: claim_batch reads the lane's candidates itself (the same ready index, the same
-- order, FOR UPDATE SKIP LOCKED) and leases them (_lease_attempts), without the four layers of
-- _claim_fair and _claim_set (measured 0.28 ms of server time per claimed step in a burn-down, half
-- of it PL/pgSQL around the two statements that do the work). A candidate with a concurrency key
-- sends the call to the fair claim, which counts the key; the rows this call already locked stay
-- its own (SKIP LOCKED skips only rows other transactions hold), so the fair claim meets them again
-- in the same order. Any other case is the fair claim, unchanged.
--
-- Planner settings (enable_sort off, jit off, below): claim_batch walks the ready index in claim
-- order, whatever the statistics say. Right after a bulk submit, before autoanalyze, the planner
-- believes the queue holds a row or two and prefers to collect every queued row through another
-- index and sort them: measured 15 ms per claim with 20,000 queued (0.5 ms with enable_sort off,
-- 0.07 ms once vacuumed; found by bench/peers). Nothing else claim_batch runs needs a sort of more
-- than p_batch_size rows. jit off: the cost penalty of that final sort would otherwise cross
-- jit_above_cost and compile every claim (300 ms measured).
CREATE OR REPLACE FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[] DEFAULT NULL::text[], p_options jsonb DEFAULT '{}'::jsonb) RETURNS TABLE(attempt_id bigint, fencing_token bigint, step_id bigint, run_id bigint, parent_id bigint, step_key text, attempt_no integer, recipe text, input jsonb, lease_expires_at timestamp with time zone, deadline_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_sort TO 'off'
    SET enable_seqscan TO 'off'
    SET jit TO 'off'
    AS $_$
declare
  v_now timestamptz := pgflight._now();
  v_reclaim integer;
  v_start boolean;
  v_settings record;
  v_ws bigint[];
  v_lane_ws bigint;
  v_lane_recipe text;
  v_lanes integer;
  v_limited boolean;
  v_ids bigint[];
  v_keyed boolean;
  v_last text;
  v_epoch double precision;
begin
  -- The options validator and the argument helpers each cost a function call with its
  -- own settings (a GUC save and restore): the start option alone, and arguments inside every
  -- bound, are read here directly; anything else goes through the helpers, which raise the error.
  if p_options = '{}' then
    v_start := false;
  elsif p_options - 'start' = '{}' and jsonb_typeof(p_options -> 'start') = 'boolean' then
    v_start := (p_options ->> 'start')::boolean;
  else
    v_start := coalesce((pgflight._check_options('claim_batch', p_options) ->> 'start')::boolean, false);
  end if;
  -- the settings and the worker's last sighting, in one read; last_seen_at null: no live
  -- worker of that id registered by this login. The worker row is locked FOR SHARE: a concurrent
  -- deregister_worker (an update of the row) is waited for and its stopped_at then read, so a claim
  -- never leases steps to a worker stopped before the claim commits (a read without the lock did,
  -- in v0.8.0); a deregister that comes after waits for the claim's commit instead.
  select s.max_batch_size, s.max_lease_s, s.reclaim_in_claim, s.max_in_flight, w.last_seen_at
    into v_settings
    from pgflight.settings s
    left join lateral (
      select w.last_seen_at from pgflight.workers w
       where w.id = p_worker_id and w.stopped_at is null and w.login = session_user
         for share of w) w on true;
  -- 604800 = _limit('lease_s'); NaN, null and infinity fail these comparisons and take the slow path
  if not coalesce(p_batch_size between 1 and least(v_settings.max_batch_size, 100000)
                  and p_lease_s >= 0.001 and p_lease_s <= least(v_settings.max_lease_s, 604800)
                  and p_lease_s <> 'NaN'::double precision, false) then
    perform pgflight._require_positive('batch_size', p_batch_size);
    perform pgflight._require_positive('lease_s', p_lease_s);
    -- Caps on the batch and the lease (claim_batch(2^31-1, 1e9) took every ready step
    -- until 2058).
    perform pgflight._require_cap('max_batch_size', v_settings.max_batch_size, p_batch_size, 'batch_size');
    perform pgflight._require_cap('max_lease_s', v_settings.max_lease_s, p_lease_s, 'lease_s (seconds)');
    -- the hard bounds whatever the caps say (NaN, a lease past _limit('lease_s')): 22023
    perform pgflight._check_arg('batch_size', p_batch_size, 1, 100000);
    perform pgflight._check_arg('lease_s', p_lease_s, 0.001, pgflight._limit('lease_s'));
  end if;
  -- the workspaces this login may work in: null (every workspace: the single-tenant case) leaves
  -- the claim query as it was; otherwise each candidate row costs one probe of runs by primary key.
  v_ws := pgflight._lane_workspaces('worker');
  -- the worker must be live and registered by this login; another login's id is unknown here
  if v_settings.last_seen_at is null then
    raise exception using errcode = 'ZF010', message = format('unknown or stopped worker %s', p_worker_id),
      detail = format('no live worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Call register_worker first and use the id it returns.';
  end if;
  -- its last sighting renewed at most once a second (a write of workers per claim; its
  -- readers, worker_list, metrics_snapshot and engine_health, count a worker alive for 60 s after
  -- it); a clock moved back renews it at once. Only when no other transaction holds the row (SKIP
  -- LOCKED): two claims of one worker id that both hold the share lock above and both went on to
  -- update it would each wait for the other's share lock, a deadlock PostgreSQL breaks by failing
  -- one claim (40P01). A skipped renewal is another claim's or a heartbeat's to make (the heartbeat
  -- writes it on every call).
  if v_settings.last_seen_at <= v_now - interval '1 second' or v_settings.last_seen_at > v_now then
    perform from pgflight.workers w where w.id = p_worker_id for no key update skip locked;
    if found then
      update pgflight.workers set last_seen_at = v_now where id = p_worker_id;
    end if;
  end if;
  -- the reclaim before the claim, at most once a second per session: its pick reads
  -- every live lease (lease_expires_at has no index, so that a heartbeat stays HOT), which cost
  -- 0.08-0.1 ms of every claim with 16 steps in flight and grows with the leases in flight; the
  -- sweeps reclaim the rest. The session's last one is pgflight.claim_reclaim_at (epoch seconds of
  -- the engine clock; anything else in it, or a clock moved back, counts as never). A reclaim that
  -- took its whole limit is not recorded: more lapsed leases may be left (a worker's crash), and
  -- the next claim goes on draining them, as every claim did before (C06, C44)
  v_reclaim := v_settings.reclaim_in_claim;
  if v_reclaim > 0 then
    v_last := current_setting('pgflight.claim_reclaim_at', true);
    v_epoch := extract(epoch from v_now);
    if v_last is null or v_last !~ '^[0-9]{1,12}(\.[0-9]{1,9})?$'
       or v_epoch < v_last::double precision or v_epoch >= v_last::double precision + 1 then
      if pgflight._reclaim(v_now, v_reclaim) < v_reclaim then
        -- (numeric text, exact: a double's text follows the session's extra_float_digits)
        perform pg_catalog.set_config('pgflight.claim_reclaim_at', extract(epoch from v_now)::text, false);
      end if;
    end if;
  end if;

  -- the fast path (see the head of this file). One statement finds the ready lanes,
  -- stopping at the second (a skip-scan probe of a ready index per recipe named, one more for a
  -- second workspace of the first lane), and whether anything else is in play for them (a recipe
  -- limit; a cap, rate limit or pause of the lane's workspace). It was one statement per recipe
  -- named plus four: 20,024 probes per 20,000 jobs with the demo worker's 8 recipes.
  if v_settings.max_in_flight is null then
    select g.lanes, g.ws, g.recipe,
           exists (select from pgflight.recipe_limits)
           or exists (select from pgflight.workspace_limits l
                       where l.workspace_id = g.ws
                         and (l.paused_at is not null or l.max_in_flight is not null or l.starts_per_s is not null))
      into v_lanes, v_lane_ws, v_lane_recipe, v_limited
      from (select count(*)::integer + coalesce(bool_or(l.more), false)::integer as lanes,
                   min(l.ws) as ws, min(l.recipe) as recipe
              from (-- p_recipes null: the first workspace with queued work, and whether there is another
                    select null::text as recipe, f.ws,
                           (select a.workspace_id from pgflight.step_attempts a
                             where a.status = 'queued' and a.available_after < 'infinity'
                               and a.workspace_id > f.ws
                             order by a.workspace_id limit 1) is not null as more
                      from (select a.workspace_id as ws from pgflight.step_attempts a
                             where a.status = 'queued' and a.available_after < 'infinity'
                             order by a.workspace_id limit 1) f
                     where p_recipes is null
                    union all
                    -- each recipe named: its first workspace with queued work, and whether there is another.
                    -- (The recipe as a range, not an equality: ordered by recipe and workspace, only the
                    -- recipe's ready index serves these reads, whatever the statistics. With an equality
                    -- the order is by workspace alone, and a plan made while one recipe filled the queue
                    -- walked the workspace ready index for each recipe named with nothing queued.)
                    select r.recipe, f.ws,
                           (select a.workspace_id from pgflight.step_attempts a
                             where (a.recipe, a.workspace_id) > (r.recipe, f.ws) and a.recipe <= r.recipe
                               and a.status = 'queued' and a.available_after < 'infinity'
                             order by a.recipe, a.workspace_id limit 1) is not null as more
                      from (select distinct u.recipe from unnest(p_recipes) as u(recipe)
                             where u.recipe is not null) r
                      cross join lateral (
                        select a.workspace_id as ws from pgflight.step_attempts a
                         where a.recipe >= r.recipe and a.recipe <= r.recipe
                           and a.status = 'queued' and a.available_after < 'infinity'
                         order by a.recipe, a.workspace_id limit 1) f
                     limit 2) l) g;
    if v_limited then
      v_lanes := -1;  -- the fair claim decides
    elsif v_lanes = 0 then
      return;  -- nothing queued that this call may claim
    end if;
    if v_lanes = 1 and (v_ws is null or v_lane_ws = any (v_ws)) then
      -- the lane's candidates in claim order, as _claim_set reads them (two statements, one per kind
      -- of lane, so that each reads its own ready index)
      if v_lane_recipe is null then
        select coalesce(array_agg(x.id), '{}'), coalesce(bool_or(x.concurrency_key is not null), false)
          into v_ids, v_keyed
          from (select a.id, a.concurrency_key from pgflight.step_attempts a
                 where a.workspace_id = v_lane_ws and a.status = 'queued'
                   and a.available_after <= v_now and a.available_after < 'infinity'
                 order by a.priority desc, a.available_after, a.id
                 limit p_batch_size
                   for update skip locked) x;
      else
        select coalesce(array_agg(x.id), '{}'), coalesce(bool_or(x.concurrency_key is not null), false)
          into v_ids, v_keyed
          from (select a.id, a.concurrency_key from pgflight.step_attempts a
                 where a.recipe = v_lane_recipe and a.workspace_id = v_lane_ws and a.status = 'queued'
                   and a.available_after <= v_now and a.available_after < 'infinity'
                 order by a.priority desc, a.available_after, a.id
                 limit p_batch_size
                   for update skip locked) x;
      end if;
      if v_ids = '{}' then
        return;  -- every candidate is held by another claimer
      elsif not v_keyed then
        -- leased at the clock's reading now, after the locks (as _claim_set does); no caps: slots 0
        return query
          select * from pgflight._lease_attempts(p_worker_id, v_ids, p_lease_s, v_start, pgflight._now(), 0::smallint);
        return;
      end if;
    end if;
  end if;

  -- the fair claim across workspaces, with caps, keys, rate limits and pause (internals/_claim_fair),
  -- over the workspaces of the login's worker lane (v_ws; null: every workspace)
  return query select * from pgflight._claim_fair(p_worker_id, p_batch_size, p_lease_s, p_recipes, v_start, v_now, v_ws);
end
$_$;

COMMENT ON FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) IS 'Lease up to p_batch_size ready attempts (lease in seconds). Returns at most p_batch_size rows, each with its fencing token, from the login''s workspaces. Options (docs/options.md): start (boolean). Errors: 22023, ZF005, ZF010 unknown worker.';

REVOKE ALL ON FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.claim_batch(p_worker_id bigint, p_batch_size integer, p_lease_s double precision, p_recipes text[], p_options jsonb) TO pgflight_worker;

commit;
