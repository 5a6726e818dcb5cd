-- Deploy pgflight:functions/deregister_worker
begin;
set local role pgflight_owner;

-- Mark a worker stopped (graceful shutdown). Its leases are unaffected: release them first.
create or replace function pgflight.deregister_worker(p_worker_id bigint)
returns void
language sql volatile security definer
set search_path = ''
as $$
  update pgflight.workers set stopped_at = pgflight._now() where id = p_worker_id and stopped_at is null
$$;
comment on function pgflight.deregister_worker(bigint) is 'Mark a worker stopped.';
grant execute on function pgflight.deregister_worker(bigint) to pgflight_worker;

commit;
