-- Deploy pgflight:tables/flow_slots

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.flow_slots (
    scope bigint NOT NULL,
    stripe smallint NOT NULL,
    cap integer NOT NULL,
    held integer DEFAULT 0 NOT NULL,
    CONSTRAINT cap_is_not_negative CHECK ((cap >= 0))
)
WITH (fillfactor='20');

COMMENT ON TABLE pgflight.flow_slots IS 'In-flight caps split into stripes: a claim takes at most cap - held from the stripes it can lock without waiting. scope: workspace id, 0 for the global cap. Reconciled by wake_parked_keys.';

ALTER TABLE ONLY pgflight.flow_slots
    ADD CONSTRAINT flow_slots_pkey PRIMARY KEY (scope, stripe);

commit;
