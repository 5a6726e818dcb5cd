-- Deploy pgflight:functions/register_worker
begin;
set local role pgflight_owner;

-- Register a worker process; returns the worker id every claim and heartbeat carries.
-- options: hostname, pid, recipes (array of names). Errors: 22023 for a blank name.
create or replace function pgflight.register_worker(p_name text, p_options jsonb default '{}')
returns bigint
language plpgsql volatile security definer
set search_path = ''
as $$
declare
  v_id bigint;
begin
  if p_name is null or btrim(p_name) = '' then
    raise exception using errcode = '22023', message = 'worker name is required',
      hint = 'Pass something that identifies the process, e.g. host:pid.';
  end if;
  insert into pgflight.workers (name, hostname, pid, recipes, options, started_at, last_seen_at)
  values (p_name, pgflight._opt_text(p_options, 'hostname', null),
          pgflight._opt_num(p_options, 'pid', null)::integer,
          case when jsonb_typeof(p_options -> 'recipes') = 'array'
               then array(select jsonb_array_elements_text(p_options -> 'recipes')) end,
          coalesce(p_options, '{}'), pgflight._now(), pgflight._now())
  returning id into v_id;
  return v_id;
end
$$;
comment on function pgflight.register_worker(text, jsonb) is
  'Register a worker process; returns its id. options: hostname, pid, recipes. Errors: 22023.';
grant execute on function pgflight.register_worker(text, jsonb) to pgflight_worker;

commit;
