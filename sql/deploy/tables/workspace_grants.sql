-- Deploy pgflight:tables/workspace_grants

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.workspace_grants (
    login name NOT NULL,
    workspace_id bigint,
    lane text NOT NULL,
    granted_at timestamp with time zone DEFAULT pgflight._now() NOT NULL,
    granted_by name DEFAULT SESSION_USER NOT NULL,
    CONSTRAINT lane_is_known CHECK ((lane = ANY (ARRAY['worker'::text, 'operator'::text, 'reader'::text])))
);

COMMENT ON TABLE pgflight.workspace_grants IS 'Tenancy: login may act in lane (worker, operator, reader; operator includes reader) on workspace_id (null: every workspace). Checked by pgflight._may; written by grant_workspace / revoke_workspace.';

ALTER TABLE ONLY pgflight.workspace_grants
    ADD CONSTRAINT one_grant_per_login_lane_workspace UNIQUE NULLS NOT DISTINCT (login, lane, workspace_id);

ALTER TABLE ONLY pgflight.workspace_grants
    ADD CONSTRAINT workspace_grants_workspace_id_fkey FOREIGN KEY (workspace_id) REFERENCES pgflight.workspaces(id) ON DELETE CASCADE;

insert into pgflight.workspace_grants (login, workspace_id, lane)
select session_user, null::bigint, l from unnest(array['worker', 'operator', 'reader']) l
union all
select 'pgflight_cron', null, 'operator'
union all
select m.rolname, null, l.lane
  from (values ('pgflight_worker', 'worker'), ('pgflight_operator', 'operator'), ('pgflight_reader', 'reader')) l(role, lane)
  join pg_catalog.pg_auth_members a on a.roleid = (select r.oid from pg_catalog.pg_roles r where r.rolname = l.role)
  join pg_catalog.pg_roles m on m.oid = a.member
 where m.rolcanlogin and m.rolname <> 'pgflight_cron'
on conflict do nothing;

commit;
