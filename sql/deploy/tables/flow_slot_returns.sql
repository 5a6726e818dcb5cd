-- Deploy pgflight:tables/flow_slot_returns

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.flow_slot_returns (
    id bigint NOT NULL,
    scope bigint NOT NULL,
    n integer DEFAULT 1 NOT NULL
);

COMMENT ON TABLE pgflight.flow_slot_returns IS 'Slots given back by attempts that left the leased set, not yet folded into a stripe by a claim.';

ALTER TABLE pgflight.flow_slot_returns ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgflight.flow_slot_returns_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY pgflight.flow_slot_returns
    ADD CONSTRAINT flow_slot_returns_pkey PRIMARY KEY (id);

CREATE INDEX flow_slot_returns_scope_idx ON pgflight.flow_slot_returns USING btree (scope);

commit;
