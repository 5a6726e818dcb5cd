-- Revert pgflight:roles
-- Roles are shared by every database of the cluster: drop each one only when nothing else
-- (another database's pgflight, a membership) still depends on it.
begin;

do $$
declare
  v_role text;
begin
  foreach v_role in array array['pgflight_reader', 'pgflight_operator', 'pgflight_worker', 'pgflight_owner'] loop
    begin
      execute format('drop role if exists %I', v_role);
    exception when dependent_objects_still_exist then
      raise notice 'role % is still used elsewhere in this cluster; kept', v_role;
    end;
  end loop;
end
$$;

commit;
