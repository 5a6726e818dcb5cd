-- Deploy pgflight:schema to pg
-- requires: roles
-- The pgflight schema, owned by pgflight_owner. Only the API roles may look inside.
begin;

create schema pgflight authorization pgflight_owner;
comment on schema pgflight is 'pgflight: durable execution engine. Tables are private; call the API functions.';
revoke all on schema pgflight from public;
grant usage on schema pgflight to pgflight_worker, pgflight_operator, pgflight_reader;
-- Functions pgflight_owner creates are not executable by PUBLIC unless granted one by one. (This
-- must be the role-wide default: a per-schema default can only add privileges, never remove them.)
alter default privileges for role pgflight_owner revoke execute on functions from public;

commit;
