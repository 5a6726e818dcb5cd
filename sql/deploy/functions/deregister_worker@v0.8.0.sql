-- Deploy pgflight:functions/deregister_worker
begin;
set local role pgflight_owner;

-- Mark a worker stopped (graceful shutdown). Its leases are unaffected: release them first.
-- Only the login that registered the worker may stop it (issue 13): any other id, stopped or
-- not, is ZF010, so a sweep over a range of ids ends nobody else's workers. Stopping a stopped
-- worker of one's own is a no-op.
create or replace function pgflight.deregister_worker(p_worker_id bigint)
returns void
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  update pgflight.workers set stopped_at = coalesce(stopped_at, pgflight._now())
   where id = p_worker_id and login = session_user;
  if not found then
    raise exception using errcode = 'ZF010', message = format('unknown worker %s', p_worker_id),
      detail = format('no worker %s registered by login %s', p_worker_id, session_user),
      hint = 'Deregister only the worker ids your own register_worker returned.';
  end if;
end
$$;
comment on function pgflight.deregister_worker(bigint) is 'Mark a worker of this login stopped. Errors: ZF010.';
grant execute on function pgflight.deregister_worker(bigint) to pgflight_worker;

commit;
