-- Deploy pgflight:internals/_unknown_workspace

begin;

set local role pgflight_owner;

-- The one answer for a workspace name the login may not see: one that does not exist, or one on
-- which it has no grant at all (not even reader). Same SQLSTATE, message and HINT for both, so
-- operator functions do not confirm another tenant's workspace names. Always raises.
CREATE OR REPLACE FUNCTION pgflight._unknown_workspace(p_workspace text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception using errcode = 'ZF003', message = format('unknown workspace %L', left(p_workspace, 200)),
    hint = 'Create it first: select pgflight.create_workspace(name).';
end
$$;

COMMENT ON FUNCTION pgflight._unknown_workspace(p_workspace text) IS 'Internal: raise ZF003 unknown workspace (the one answer for a name unknown or outside every lane).';

REVOKE ALL ON FUNCTION pgflight._unknown_workspace(p_workspace text) FROM PUBLIC;

commit;
