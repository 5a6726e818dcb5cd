-- Deploy pgflight:functions/grant_workspace

begin;

set local role pgflight_owner;

-- Grant a login a lane (worker, operator, reader) on a workspace (by name; null: every workspace,
-- present and future). Idempotent: granting twice changes nothing. Only the owner (its members and
-- superusers) may call it: EXECUTE is granted to no lane. The login must exist; the workspace too.
-- Errors: 22023 unknown lane or login, ZF003 unknown workspace.
CREATE OR REPLACE FUNCTION pgflight.grant_workspace(p_login name, p_workspace text, p_lane text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ws bigint;
  v_added integer;
begin
  if p_lane is null or p_lane not in ('worker', 'operator', 'reader') then
    raise exception using errcode = '22023', message = format('unknown lane %L', p_lane),
      hint = 'The lanes are worker, operator and reader (operator includes reader).';
  end if;
  if p_login is null or not exists (select from pg_catalog.pg_roles r where r.rolname = p_login) then
    raise exception using errcode = '22023', message = format('unknown login %L', p_login),
      hint = 'CREATE ROLE the login first (LOGIN, in role pgflight_worker / _operator / _reader).';
  end if;
  if p_workspace is not null then
    select w.id into v_ws from pgflight.workspaces w where w.name = p_workspace;
    if not found then
      raise exception using errcode = 'ZF003', message = format('unknown workspace %L', p_workspace),
        hint = 'Create it with pgflight.create_workspace first.';
    end if;
  end if;
  insert into pgflight.workspace_grants (login, workspace_id, lane) values (p_login, v_ws, p_lane)
  on conflict do nothing;
  get diagnostics v_added = row_count;
  return v_added > 0;
end
$$;

COMMENT ON FUNCTION pgflight.grant_workspace(p_login name, p_workspace text, p_lane text) IS 'Owner only: let a login act in a lane on a workspace (null: every workspace). True when newly granted. Errors: 22023, ZF003.';

REVOKE ALL ON FUNCTION pgflight.grant_workspace(p_login name, p_workspace text, p_lane text) FROM PUBLIC;

commit;
