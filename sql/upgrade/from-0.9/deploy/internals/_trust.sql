-- Deploy pgflight:internals/_trust
-- requires: tables/workspace_grants tables/workers_login tables/settings_caps
-- Defines: _may(), _lane_workspaces(), _require_lane(), _require_lane_on_run(), _require_lane_on_step(),
--          _require_cap(), _require_own_attempt(), _unknown_attempt(), _unknown_workspace(), _null_refused(),
--          _refuse_fence_arrays(), _actor_note().
-- The trust boundary's checks (issue 13; docs/security.md), written once:
--   tenancy   _may / _lane_workspaces / _require_lane read workspace_grants for session_user (the
--             authenticated login; SET ROLE does not change it). Superusers pass every check.
--   caps      _require_cap raises ZF005 naming the settings column.
--   holders   _require_own_attempt raises ZF012 when an attempt's current token is sent by a login
--             none of whose workers holds it; _unknown_attempt is the one answer (ZF003) for an
--             attempt that does not exist or lies outside the login's worker lanes; _null_refused
--             the one answer (22023) for a NULL id or token. The fence's rule: internals/_fencing.
-- _may and _lane_workspaces are SECURITY DEFINER and granted to every lane: the views call them
-- with the reader's rights, and they reveal only the caller's own grants. The rest is internal.
begin;
set local role pgflight_owner;

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
-- caller raises its own ZF003 for it). An id in a workspace the login has no lane on at all (not
-- even reader) answers exactly as the caller's unknown id: ZF003 'unknown run <id>' / 'unknown step
-- <id>', no DETAIL, no HINT, so a login cannot learn that another tenant's id exists. ZF012 only
-- where the login already sees the workspace (it reads there, and lacks this lane).
create or replace function pgflight._require_lane_on_run(p_lane text, p_run_id bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws bigint;
begin
  select r.workspace_id into v_ws from pgflight.runs r where r.id = p_run_id;
  if found and not pgflight._may(p_lane, v_ws) then
    if not pgflight._may('reader', v_ws) then
      raise exception using errcode = 'ZF003', message = format('unknown run %s', p_run_id);
    end if;
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;
comment on function pgflight._require_lane_on_run(text, bigint, text) is
  'Internal: ZF012 unless the login has the lane on the run''s workspace (ZF003 unknown run when it '
  'sees nothing there); an unknown run passes.';

create or replace function pgflight._require_lane_on_step(p_lane text, p_step_id bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_ws bigint;
begin
  select r.workspace_id into v_ws from pgflight.steps s join pgflight.runs r on r.id = s.run_id where s.id = p_step_id;
  if found and not pgflight._may(p_lane, v_ws) then
    if not pgflight._may('reader', v_ws) then
      raise exception using errcode = 'ZF003', message = format('unknown step %s', p_step_id);
    end if;
    perform pgflight._require_lane(p_lane, v_ws, p_operation);
  end if;
end
$$;
comment on function pgflight._require_lane_on_step(text, bigint, text) is
  'Internal: ZF012 unless the login has the lane on the step''s workspace (ZF003 unknown step when it '
  'sees nothing there); an unknown step passes.';

-- The one answer for a workspace name the login may not see: one that does not exist, or one on
-- which it has no grant at all (not even reader). Same SQLSTATE, message and HINT for both, so
-- operator functions do not confirm another tenant's workspace names. Always raises.
create or replace function pgflight._unknown_workspace(p_workspace text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  raise exception using errcode = 'ZF003', message = format('unknown workspace %L', left(p_workspace, 200)),
    hint = 'Create it first: select pgflight.create_workspace(name).';
end
$$;
comment on function pgflight._unknown_workspace(text) is
  'Internal: raise ZF003 unknown workspace (the one answer for a name unknown or outside every lane).';

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

-- The answer for an attempt the login may not see: one that does not exist, or one in a workspace
-- where the login has no worker lane and that no worker of the login holds. One shape for both
-- (ZF003, the id and nothing else: no DETAIL, no status, no workspace), so an id of another tenant
-- reads exactly as an id that was never issued. Always raises.
create or replace function pgflight._unknown_attempt(p_attempt_id bigint)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  raise exception using
    errcode = 'ZF003',
    message = format('unknown attempt %s', p_attempt_id),
    hint    = 'Use the attempt_id returned by claim_batch.';
end
$$;
comment on function pgflight._unknown_attempt(bigint) is
  'Internal: raise ZF003 unknown attempt (the one answer for an attempt unknown or outside the lanes).';

-- The answer for a NULL where a fenced function needs a value (an attempt id, a fencing token, an
-- element of their arrays): 22023, raised before anything is read, the same for every id. A NULL
-- never matches a token: a never-claimed attempt has none, so a NULL must not reach a comparison
-- that treats two NULLs as equal. Always raises.
create or replace function pgflight._null_refused(p_operation text, p_what text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  raise exception using
    errcode = '22023',
    message = format('%s refused: %s is null', p_operation, p_what),
    hint    = 'Pass the attempt_id and fencing_token that claim_batch returned, one token per attempt.';
end
$$;
comment on function pgflight._null_refused(text, text) is
  'Internal: raise 22023 for a NULL attempt id, fencing token or array element of a fenced call.';

-- The same for the parallel arrays of a batch (heartbeat, complete_batch): called when an element
-- of the attempt ids or tokens is NULL, or an array has more than one dimension (22023 for both).
-- Always raises.
create or replace function pgflight._refuse_fence_arrays(p_operation text, p_attempt_ids bigint[], p_tokens bigint[])
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
begin
  if array_ndims(p_attempt_ids) > 1 or array_ndims(p_tokens) > 1 then
    raise exception using
      errcode = '22023',
      message = format('%s refused: attempt ids and tokens must be one-dimensional arrays', p_operation),
      detail  = format('%s dimensions of attempt ids, %s of tokens', coalesce(array_ndims(p_attempt_ids), 1),
                       coalesce(array_ndims(p_tokens), 1)),
      hint    = 'Pass one flat array of attempt ids and one of their tokens, in the same order.';
  end if;
  perform pgflight._null_refused(p_operation, format('element %s of the %s',
    coalesce(array_position(p_attempt_ids, null), array_position(p_tokens, null)),
    case when array_position(p_attempt_ids, null) is not null then 'attempt ids' else 'tokens' end));
end
$$;
comment on function pgflight._refuse_fence_arrays(text, bigint[], bigint[]) is
  'Internal: raise 22023 for a batch''s attempt ids or tokens with a NULL element or more than one dimension.';

-- Raise when p_token is the current token of attempt p_attempt_id and no worker of the calling
-- login holds the attempt (another login's worker, or no worker at all): the caller has a
-- capability that is not its own (a leaked token). ZF012 when the attempt is in a workspace where
-- the login has the worker lane; otherwise the answer for an unknown attempt (ZF003), so a token
-- of another tenant tells nothing about it. A NULL id or token is refused (22023). Returns when
-- the token is not the attempt's current one, or the attempt is unknown: the caller answers for
-- that (lease lost, unknown attempt). Nothing about the attempt is shown.
create or replace function pgflight._require_own_attempt(p_attempt_id bigint, p_token bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_in_lane boolean;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused(p_operation, case when p_attempt_id is null then 'the attempt id'
                                                     else 'the fencing token' end);
  end if;
  select pgflight._may('worker', a.workspace_id) into v_in_lane
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id and a.fencing_token = p_token
     and w.login is distinct from session_user;
  if not found then
    return;
  end if;
  if not v_in_lane then
    perform pgflight._unknown_attempt(p_attempt_id);
  end if;
  raise exception using
    errcode = 'ZF012',
    message = format('%s refused: attempt %s is not held by a worker of login %s', p_operation, p_attempt_id,
                     session_user),
    detail  = 'An attempt may be written only by the login whose worker claimed it, whatever token is sent.',
    hint    = 'Write only attempts that your own claim_batch returned.';
end
$$;
comment on function pgflight._require_own_attempt(bigint, bigint, text) is
  'Internal: raise when this token is the attempt''s current one but no worker of the login holds it '
  '(ZF012; ZF003 outside the login''s worker lanes); 22023 for a NULL id or token.';

commit;
