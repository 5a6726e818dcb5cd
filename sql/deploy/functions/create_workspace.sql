-- Deploy pgflight:functions/create_workspace

begin;

set local role pgflight_owner;

-- Create a workspace (tenant), or update the caps of an existing one with the same name.
-- options: daily_usd_cap (USD per UTC day), max_run_usd (USD per run tree). Idempotent by name.
-- Errors: 22023 for a blank name or a non-numeric cap.
CREATE OR REPLACE FUNCTION pgflight.create_workspace(p_name text, p_options jsonb DEFAULT '{}'::jsonb) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
begin
  perform pgflight._require_lane('operator', null, 'create_workspace');  -- acts on every workspace
  if length(p_name) > 200 then
    raise exception using errcode = '22023', message = 'workspace name is longer than 200 characters',
      detail = format('got %s characters', length(p_name));
  end if;
  -- every option checked against its spec first (docs/options.md): 22023 naming the key
  p_options := pgflight._check_options('create_workspace', p_options);
  if p_name is null or btrim(p_name) = '' then
    raise exception using errcode = '22023', message = 'workspace name is required',
      hint = 'Pass a non-blank name, e.g. select pgflight.create_workspace(''default'').';
  end if;
  insert into pgflight.workspaces as w (name, daily_usd_cap, max_run_usd, options)
  values (p_name,
          pgflight._opt_num(p_options, 'daily_usd_cap', null),
          pgflight._opt_num(p_options, 'max_run_usd', null),
          coalesce(p_options, '{}'))
  on conflict (name) do update
     set daily_usd_cap = coalesce(excluded.daily_usd_cap, w.daily_usd_cap),
         max_run_usd = coalesce(excluded.max_run_usd, w.max_run_usd),
         options = w.options || excluded.options
  returning id into v_id;
  return v_id;
end
$$;

COMMENT ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) IS 'Create or update a workspace by name; returns its id. options: daily_usd_cap, max_run_usd (USD). Errors: 22023.';

REVOKE ALL ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgflight.create_workspace(p_name text, p_options jsonb) TO pgflight_operator;

commit;
