-- Deploy pgflight:internals/_fencing
-- Defines: _reject_write(), _lock_held(), _record_stale().
-- The fence every write by a worker passes: lock the attempt held with this token, or reject and log the stale write.
-- The fence's rule is written once, above _reject_write.
-- None is granted to any role.
begin;
set local role pgflight_owner;

-- THE FENCE (docs/security.md, "The fence"). A worker write names an attempt and carries the
-- fencing token its claim returned. It is accepted only when the attempt is held with exactly that
-- token (claimed or running; also cancel_requested for the writes that acknowledge a cancel; any
-- status for record_effect and record_orphan_cost, which record what a holder already did) by a
-- worker of the calling login (session_user). Every fenced function checks this first, before it
-- reads or writes anything of a run (argument checks that depend only on the arguments and the
-- global settings may come before: they answer the same for every id), and every other call
-- raises, saying no more than the caller may know:
--   22023  a NULL attempt id or token, or a NULL element of a batch's arrays (_null_refused): the
--          same for every id. A never-claimed attempt's token is NULL, so two NULLs must never
--          compare as a match;
--   ZF003  an unknown attempt, or one outside the login's worker lanes (a workspace it has no
--          worker grant on, and no worker of its own holds the attempt): one answer for both
--          (_unknown_attempt: the id, no DETAIL), so another tenant's id reads as one never issued;
--   ZF012  an attempt of the login's own workspaces whose current token is sent by a login none
--          of whose workers holds it (another login's worker, or none): a leaked token;
--   ZF002  the attempt was cancelled (its current token was sent);
--   ZF001  anything else: the lease was lost.
-- The accepting statement is the function's own (one statement on the hot path: the lock, or the
-- write, with the token and the holder's login in its predicate); on a miss it calls
-- _reject_write, which ends in a raise on every path. A revoked lane stops new claims only:
-- attempts the login's workers already hold finish (docs/security.md).

-- Raise the refusal of a worker write that did not match a live attempt held by the login with
-- this token, by the rule above. Called after the fenced statement missed; it never returns.
-- The current token is never shown (it is a capability); the attempt's status only to the login
-- whose worker holds it.
create or replace function pgflight._reject_write(p_attempt_id bigint, p_token bigint, p_operation text)
returns void
language plpgsql stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_att record;
begin
  if p_attempt_id is null or p_token is null then
    perform pgflight._null_refused(p_operation, case when p_attempt_id is null then 'the attempt id'
                                                     else 'the fencing token' end);
  end if;
  select a.status, a.fencing_token, w.login,
         w.login is not distinct from session_user or pgflight._may('worker', a.workspace_id) as visible
    into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id;
  if not found or not v_att.visible then
    perform pgflight._unknown_attempt(p_attempt_id);
  end if;
  if v_att.fencing_token = p_token and v_att.login is distinct from session_user then
    perform pgflight._require_own_attempt(p_attempt_id, p_token, p_operation);  -- ZF012
  end if;
  if v_att.fencing_token = p_token and v_att.status in ('cancel_requested', 'cancelled') then
    raise exception using
      errcode = 'ZF002',
      message = format('%s rejected: attempt %s was cancelled', p_operation, p_attempt_id),
      detail  = format('attempt status %s', v_att.status),
      hint    = 'The run or step was cancelled; stop the work and call release_step to acknowledge.';
  end if;
  -- every other path, and the one where the attempt changed since the fenced statement read it
  raise exception using
    errcode = 'ZF001',
    message = format('lease lost on attempt %s', p_attempt_id),
    detail  = format('%s refused: the attempt is not held with caller token %s%s', p_operation, p_token,
                     case when v_att.login = session_user then format(' (attempt status %s)', v_att.status)
                          else '' end),
    hint    = 'The step was reclaimed or finished; abandon this attempt and write nothing.';
end
$$;
comment on function pgflight._reject_write(bigint, bigint, text) is
  'Internal: raise the refusal of a fenced write, never returns: 22023 (NULL id or token), ZF003 '
  '(unknown, or outside the login''s worker lanes), ZF012 (a leaked token), ZF002 (cancelled), ZF001.';

-- Lock the attempt a worker write is about: it must be live and held with this fencing token
-- (claimed or running; also cancel_requested when p_with_cancel_requested, for the writes that
-- acknowledge a cancel) by a worker of the calling login (a token is useless to anyone else).
-- Returns the locked row; otherwise _reject_write raises (the fence's rule, above). A NULL id or
-- token matches no row (= is never true for a NULL), so it reaches _reject_write's 22023.
create or replace function pgflight._lock_held(p_attempt_id bigint, p_token bigint, p_operation text,
                                    p_with_cancel_requested boolean default false)
returns pgflight.step_attempts
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_row pgflight.step_attempts;
begin
  select a.* into v_row from pgflight.step_attempts a
   where a.id = p_attempt_id and a.fencing_token = p_token
     and (a.status in ('claimed', 'running') or (p_with_cancel_requested and a.status = 'cancel_requested'))
     and exists (select from pgflight.workers w where w.id = a.worker_id and w.login = session_user)
     for update of a;
  if not found then
    perform pgflight._reject_write(p_attempt_id, p_token, p_operation);
  end if;
  return v_row;
end
$$;
comment on function pgflight._lock_held(bigint, bigint, text, boolean) is
  'Internal: lock a live attempt held with this token, or raise as _reject_write (22023, ZF001, ZF002, ZF003, ZF012).';

-- Append a stale_result_rejected event for a write that was refused. Internal form used by the
-- batch functions; it writes nothing when the token is in fact current and owned, when the
-- attempt's worker belongs to another login, or past settings.max_stale_writes_per_attempt
-- (issue 13: no login can flood another's log). The event keeps the caller's token only.
create or replace function pgflight._record_stale(p_attempt_id bigint, p_token bigint, p_operation text)
returns boolean
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
  v_att record;
begin
  select a.id, a.run_id, a.step_id, a.status, a.fencing_token, a.worker_id, w.login into v_att
    from pgflight.step_attempts a left join pgflight.workers w on w.id = a.worker_id
   where a.id = p_attempt_id;
  if not found or (v_att.fencing_token is not distinct from p_token and v_att.status in ('claimed', 'running'))
     or v_att.login is distinct from session_user
     or (select count(*) from pgflight.events e
          where e.run_id = v_att.run_id and e.attempt_id = v_att.id and e.reason = 'stale_result_rejected')
        >= (select s.max_stale_writes_per_attempt from pgflight.settings s) then
    return false;
  end if;
  perform pgflight._event(v_att.run_id, v_att.step_id, v_att.id, v_att.status, v_att.status, null,
                          'stale_result_rejected', null,
                          jsonb_build_object('operation', p_operation, 'caller_token', p_token));
  return true;
end
$$;
comment on function pgflight._record_stale(bigint, bigint, text) is
  'Internal: log a refused write as stale_result_rejected; false when the token is still current.';

commit;
