-- Deploy pgflight:views/engine_health
-- Read-only views for operators and readers. They run with the owner's rights, so readers need
-- no table privileges.
begin;
set local role pgflight_owner;

create or replace view pgflight.engine_health as
select (select count(*) from pgflight.step_attempts a where a.status = 'queued' and a.available_after <= (select pgflight._now())) as ready,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running', 'cancel_requested')) as leased,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running', 'cancel_requested')
           and a.lease_expires_at < (select pgflight._now())) as expired_not_reclaimed,
       (select count(*) from pgflight.step_attempts a where a.status in ('claimed', 'running')
           and a.deadline_at < (select pgflight._now()) and a.lease_expires_at >= (select pgflight._now())) as over_deadline_heartbeating,
       (select count(*) from pgflight.step_attempts a where a.status in ('awaiting_children', 'awaiting_approval')) as parked,
       (select count(*) from pgflight.workers w where w.stopped_at is null
           and w.last_seen_at > (select pgflight._now()) - interval '60 seconds') as workers_alive;
comment on view pgflight.engine_health is
  'Gauges: ready, leased, expired leases not yet reclaimed, attempts over their deadline but still heartbeating (C15), parked, workers seen in the last 60 s.';
grant select on pgflight.engine_health to pgflight_reader, pgflight_operator;

commit;
