-- Deploy pgflight:functions/register_worker

begin;

set local role pgflight_owner;

-- Register a worker process; returns the worker id every claim and heartbeat carries.
-- options: hostname, pid, recipes (array of names). Errors: 22023 for a blank name.
CREATE OR REPLACE FUNCTION pgflight.register_worker(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
  v_caps pgflight.settings;
begin
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('register_worker', p_options);
  if p_name is null or btrim(p_name) = '' then
    raise exception using errcode = '22023', message = 'worker name is required',
      hint = 'Pass something that identifies the process, e.g. host:pid.';
  end if;
  -- The worker belongs to the registering login (workers.login defaults to session_user);
  -- its name and options are capped, and so is the number of its live workers, so a login cannot
  -- flood the table. The count uses workers_login_live_idx.
  select * into v_caps from pgflight.settings;
  perform pgflight._require_cap('max_name_bytes', v_caps.max_name_bytes, octet_length(p_name), 'worker name (bytes)');
  perform pgflight._require_cap('max_name_bytes', v_caps.max_name_bytes * 100,
                                octet_length(coalesce(p_options, '{}')::text), 'worker options (bytes; cap is 100 x)');
  perform pgflight._require_cap('max_live_workers_per_login', v_caps.max_live_workers_per_login,
                                (select count(*) + 1 from pgflight.workers w
                                  where w.login = session_user and w.stopped_at is null),
                                format('live workers of login %s', session_user));
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

COMMENT ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) IS 'Register a worker process of this login; returns its id. options: hostname, pid, recipes. Errors: 22023, ZF005 name, options or live workers over their cap.';

REVOKE ALL ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.register_worker(p_name text, p_options jsonb) TO pgflight_worker;

commit;
