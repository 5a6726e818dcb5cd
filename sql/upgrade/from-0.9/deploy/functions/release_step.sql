-- Deploy pgflight:functions/release_step
begin;
set local role pgflight_owner;

-- Give a held attempt back (graceful shutdown): it returns to queued at once, no attempt spent
-- (documented: release is the one unsuccessful ending that does not count toward max_attempts;
-- a worker that is killed instead is charged through lease expiry). On an attempt whose run was
-- cancelled it acknowledges the cancel: the attempt becomes cancelled.
-- Options (docs/options.md): retry_after_s (seconds, 0 to 2592000, default 0): the step is queued
-- but claimable only that many seconds from now, on the server's clock (a step given back after a
-- rate limit keeps the server's Retry-After as its earliest next claim; no attempt is spent).
-- Returns the outcome (released: queued again, or cancelled; the words every batch function shares).
-- Errors: ZF001 lease lost, ZF003 unknown attempt, 22023 bad options.
-- Lock order (docs/locking.md): acknowledging a cancel ends the step, and under a fail-fast parent
-- still waiting for its children that end dead-letters the parent and cancels the siblings. So on
-- that path the subtree its end may cancel is locked first, deepest first then id (_lock_cascade,
-- as fail_step), before any steps row; a sibling's completion under way is waited for there, not
-- after the parent's row (which that completion takes next: 40P01 before). A plain release locks
-- the attempt alone. An attempt that became cancel_requested between the read and its lock is
-- given back (its block rolled back) and taken again after its cascade.
drop function if exists pgflight.release_step(bigint, bigint, text);
create or replace function pgflight.release_step(p_attempt_id bigint, p_token bigint, p_reason text default 'released',
                                                 p_options jsonb default '{}')
returns table (attempt_id bigint, status text)
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_row pgflight.step_attempts;
  v_now timestamptz := pgflight._now();
  v_cascade boolean;
  v_opts jsonb := pgflight._check_options('release_step', p_options);
  v_after double precision := coalesce((v_opts ->> 'retry_after_s')::double precision, 0);
begin
  loop
    v_cascade := exists (select from pgflight.step_attempts a
                          where a.id = p_attempt_id and a.fencing_token = p_token and a.status = 'cancel_requested');
    if v_cascade then
      perform pgflight._lock_cascade(p_attempt_id, false);
    end if;
    begin
      v_row := pgflight._lock_held(p_attempt_id, p_token, 'release_step', true);
      if v_row.status = 'cancel_requested' and not v_cascade then
        raise exception using errcode = 'ZF099', message = 'internal: take the cascade''s locks first';
      end if;
      exit;
    exception when sqlstate 'ZF099' then
      null;  -- the attempt's lock given back with the block; round again, the cascade first
    end;
  end loop;
  if v_row.status = 'cancel_requested' then
    update pgflight.step_attempts set status = 'cancelled', finished_at = v_now where id = p_attempt_id;
    perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, 'cancel_requested', 'cancelled',
                            v_row.worker_id, 'cancelled', null, jsonb_build_object('note', p_reason));
    perform pgflight._step_finished(v_row.step_id, 'cancelled');
    return query select p_attempt_id, 'cancelled'::text;
    return;
  end if;
  update pgflight.step_attempts set status = 'queued', available_after = v_now + make_interval(secs => v_after)
   where id = p_attempt_id;
  perform pgflight._event(v_row.run_id, v_row.step_id, p_attempt_id, v_row.status, 'queued',
                          v_row.worker_id, 'released', null,
                          case when p_reason is null then null else jsonb_build_object('note', p_reason) end);
  if v_after = 0 then
    perform pgflight._notify_ready();  -- a later claim is found by the workers' poll
  end if;
  return query select p_attempt_id, 'released'::text;
end
$$;
comment on function pgflight.release_step(bigint, bigint, text, jsonb) is
  'Return a held attempt to queued (no attempt spent), or acknowledge a cancel; outcome released | cancelled. Options (docs/options.md): '
  'retry_after_s (seconds, 0 to 2592000: claimable only then). Errors: ZF001, ZF003, 22023.';
grant execute on function pgflight.release_step(bigint, bigint, text, jsonb) to pgflight_worker;

commit;
