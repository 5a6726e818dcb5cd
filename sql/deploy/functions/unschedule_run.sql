-- Deploy pgflight:functions/unschedule_run
begin;
set local role pgflight_owner;

-- Remove a schedule (and its firing log). Runs it already submitted go on. Returns true when a
-- schedule was removed. Errors: ZF003 unknown workspace.
create or replace function pgflight.unschedule_run(p_workspace text, p_name text)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  perform pgflight._require_lane('operator', pgflight._workspace_id(p_workspace), 'unschedule_run');  -- issue 13: tenants
  delete from pgflight.schedules s where s.workspace_id = pgflight._workspace_id(p_workspace) and s.name = p_name;
  return found;
end
$$;
comment on function pgflight.unschedule_run(text, text) is 'Remove a schedule by workspace and name; true when removed. Errors: ZF003.';
revoke execute on function pgflight.unschedule_run(text, text) from public;
grant execute on function pgflight.unschedule_run(text, text) to pgflight_operator;

commit;
