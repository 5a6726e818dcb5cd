-- Deploy pgflight:tables/workers_login
-- requires: tables/workers
-- A worker id belongs to the login that registered it (issue 13): claim_batch, heartbeat,
-- deregister_worker and every fenced write check workers.login = session_user. Rows registered
-- before this change belong to the login that deploys it.
begin;
set local role pgflight_owner;

alter table pgflight.workers add column login name not null default session_user;
comment on column pgflight.workers.login is
  'The login (session_user) that registered the worker; only it may use the worker id.';
-- the live workers of a login, counted against settings.max_live_workers_per_login
create index workers_login_live_idx on pgflight.workers (login) where stopped_at is null;

commit;
