-- Deploy pgflight:tables/workspace_grants
-- requires: tables/workspaces roles/pgflight_cron
-- Tenancy (issue 13; docs/security.md#tenancy): which login may act in which lane on which
-- workspace. workspace_id null means every workspace, present and future. The operator lane
-- includes the reader lane. Written only through grant_workspace / revoke_workspace (owner).
-- Single tenant out of the box: the login that deploys gets every lane on every workspace, and
-- pgflight_cron (pg_cron's role) the operator lane on every workspace, for the sweeps. On an
-- upgrade, every login that is already a member of a lane role keeps that lane on every workspace,
-- so nothing that worked stops; logins created afterwards get only what grant_workspace gives.
begin;
set local role pgflight_owner;

create table pgflight.workspace_grants (
  login         name not null,
  workspace_id  bigint references pgflight.workspaces (id) on delete cascade,
  lane          text not null,
  granted_at    timestamptz not null default pgflight._now(),
  granted_by    name not null default session_user,
  constraint lane_is_known check (lane in ('worker', 'operator', 'reader')),
  constraint one_grant_per_login_lane_workspace unique nulls not distinct (login, lane, workspace_id)
);
comment on table pgflight.workspace_grants is
  'Tenancy: login may act in lane (worker, operator, reader; operator includes reader) on workspace_id '
  '(null: every workspace). Checked by pgflight._may; written by grant_workspace / revoke_workspace.';

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
