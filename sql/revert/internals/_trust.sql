-- Revert pgflight:internals/_trust: restores the previous definition, deploy/internals/_trust@v0.9.0.sql (written by scripts/gen_sql_scripts.py)
-- requires: tables/workspace_grants tables/workers_login tables/settings_caps
-- Defines: _may(), _lane_workspaces(), _require_lane(), _require_lane_on_run(), _require_lane_on_step(),
--          _require_cap(), _require_own_attempt(), _actor_note().
-- The trust boundary's checks (issue 13; docs/security.md), written once:
--   tenancy   _may / _lane_workspaces / _require_lane read workspace_grants for session_user (the
--             authenticated login; SET ROLE does not change it). Superusers pass every check.
--   caps      _require_cap raises ZF005 naming the settings column.
--   holders   _require_own_attempt raises ZF012 when an attempt's worker belongs to another login.
-- _may and _lane_workspaces are SECURITY DEFINER and granted to every lane: the views call them
-- with the reader's rights, and they reveal only the caller's own grants. The rest is internal.
begin;
set local role pgflight_owner;
drop function pgflight._refuse_fence_arrays(text, bigint[], bigint[]);
drop function pgflight._null_refused(text, text);
drop function pgflight._unknown_attempt(bigint);
drop function pgflight._unknown_workspace(text);

-- May the login act in p_lane on workspace p_workspace_id? p_workspace_id null asks for every
-- workspace (an every-workspace grant). Any grant on a workspace includes the reader lane there
-- (what a worker may read is further limited by the SQL grants: no view is granted to
-- pgflight_worker). One probe of
-- workspace_grants' unique index (login, lane, workspace_id), plus a syscache-backed role lookup.
create or replace function pgflight._may(p_lane text, p_workspace_id bigint)
returns boolean
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- PL/pgSQL rather than SQL (issue 15/18 claim cost): a SQL function with a SET clause is never
  -- inlined and its query is planned on every call (measured 0.3 ms per claim_batch with
  -- _lane_workspaces); PL/pgSQL caches the plan for the session
  return exists (select from pgflight.workspace_grants g
                  where g.login = session_user
                    and (g.lane = p_lane or p_lane = 'reader')
                    and (g.workspace_id is null or g.workspace_id = p_workspace_id))
      or coalesce((select r.rolsuper from pg_catalog.pg_roles r where r.rolname = session_user), false);
end
$$;
comment on function pgflight._may(text, bigint) is
  'Internal: may the login (session_user) act in this lane on this workspace (null: on every one)?';
grant execute on function pgflight._may(text, bigint) to pgflight_worker, pgflight_operator, pgflight_reader;

-- The workspaces the login may act on in p_lane: null when every workspace (the single-tenant
-- case, so callers skip the filter), else the granted ids (possibly none).
create or replace function pgflight._lane_workspaces(p_lane text)
returns bigint[]
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  -- PL/pgSQL for its cached plan, as _may
  return case when pgflight._may(p_lane, null) then null
              else coalesce((select array_agg(distinct g.workspace_id) from pgflight.workspace_grants g
                              where g.login = session_user and g.workspace_id is not null
                                and (g.lane = p_lane or p_lane = 'reader')),
                            '{}') end;
end
$$;
comment on function pgflight._lane_workspaces(text) is
  'Internal: ids of the workspaces the login may act on in this lane; null for every workspace.';
grant execute on function pgflight._lane_workspaces(text) to pgflight_worker, pgflight_operator, pgflight_reader;

-- Raise ZF012 unless the login may act in p_lane on p_workspace_id (null: every workspace).
-- The message names the login and the lane; another tenant's workspace only by id.
create or replace function pgflight._require_lane(p_lane text, p_workspace_id bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  if not pgflight._may(p_lane, p_workspace_id) then
    raise exception using
      errcode = 'ZF012',
      message = format('%s refused: login %s may not act as %s on %s', p_operation, session_user, p_lane,
                       coalesce('workspace ' || p_workspace_id, 'every workspace')),
      detail  = format('no %s grant for login %s on %s in pgflight.workspace_grants', p_lane, session_user,
                       coalesce('workspace ' || p_workspace_id, 'every workspace (this call acts on all of them)')),
      hint    = format('The owner grants it: select pgflight.grant_workspace(%L, <workspace name, or null for all>, %L);',
                       session_user, p_lane);
  end if;
end
$$;
comment on function pgflight._require_lane(text, bigint, text) is
  'Internal: raise ZF012 unless the login may act in this lane on this workspace (null: every one).';

-- _require_lane on the workspace of run p_run_id / of step p_step_id. An unknown id passes (the
-- caller raises its own ZF003 for it).
create or replace function pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws bigint;
begin
  select r.workspace_id into v_ws from pgflight.runs r where r.id = p_run_id;
  if found then
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;
comment on function pgflight._require_lane_on_run(text, bigint, text) is
  'Internal: ZF012 unless the login has the lane on the run''s workspace; an unknown run passes.';

create or replace function pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text)
returns void
language sql stable
set search_path = pg_catalog, pg_temp
as $$
  select pgflight._require_lane_on_run(p_lane, (select s.run_id from pgflight.steps s where s.id = p_step_id),
                                       p_operation)
$$;
comment on function pgflight._require_lane_on_step(text, bigint, text) is
  'Internal: ZF012 unless the login has the lane on the step''s workspace; an unknown step passes.';

-- The note an operator call records: its free-text note, and the p_actor it was given when that is
-- not the login itself. Actor fields record the login (session_user); what a caller says about
-- who it acts for is kept, as a note, never as the actor (issue 13).
create or replace function pgflight._actor_note(p_note text, p_actor text)
returns text
language sql immutable
set search_path = pg_catalog, pg_temp
as $$
  select case when p_actor is null or p_actor = session_user::text then p_note
              else concat_ws(' ', p_note, format('[on behalf of %s]', p_actor)) end
$$;
comment on function pgflight._actor_note(text, text) is
  'Internal: an operator''s note with the unauthenticated p_actor appended as "[on behalf of ...]".';

-- Raise ZF005 when p_value exceeds the cap p_limit, the value of settings column p_cap.
create or replace function pgflight._require_cap(p_cap text, p_limit double precision, p_value double precision,
                                                 p_what text)
returns void
language plpgsql immutable
set search_path = pg_catalog, pg_temp
as $$
begin
  if p_value > p_limit then
    raise exception using
      errcode = 'ZF005',
      message = format('%s over the cap settings.%s', p_what, p_cap),
      detail  = format('%s is %s; settings.%s is %s', p_what, p_value, p_cap, p_limit),
      hint    = format('Send less (store a large payload elsewhere and pass a reference), or raise the cap: '
                       'UPDATE pgflight.settings SET %s = ...', p_cap);
  end if;
end
$$;
comment on function pgflight._require_cap(text, double precision, double precision, text) is
  'Internal: raise ZF005 naming settings.p_cap when p_value is over it.';

-- Raise ZF012 when attempt p_attempt_id is held with p_token by a worker of another login: the
-- caller has a capability that is not its own (a leaked token). Nothing about the attempt is shown.
create or replace function pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  if exists (select from pgflight.step_attempts a join pgflight.workers w on w.id = a.worker_id
              where a.id = p_attempt_id and a.fencing_token = p_token and w.login <> session_user) then
    raise exception using
      errcode = 'ZF012',
      message = format('%s refused: attempt %s is not held by a worker of login %s', p_operation, p_attempt_id,
                       session_user),
      detail  = 'An attempt may be written only by the login whose worker claimed it, whatever token is sent.',
      hint    = 'Write only attempts that your own claim_batch returned.';
  end if;
end
$$;
comment on function pgflight._require_own_attempt(bigint, bigint, text) is
  'Internal: raise ZF012 when the attempt is held with this token by another login''s worker.';

commit;
