-- Deploy pgflight:tables/wake_ticket_secret

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.wake_ticket_secret (
    id boolean DEFAULT true NOT NULL,
    secret bytea DEFAULT sha256(convert_to(((gen_random_uuid())::text || (gen_random_uuid())::text), 'UTF8'::name)) NOT NULL,
    CONSTRAINT one_row CHECK (id)
);

COMMENT ON TABLE pgflight.wake_ticket_secret IS 'One row: the random secret (32 bytes) wake_ticket_key mixes into every wake ticket''s lock key.';

ALTER TABLE ONLY pgflight.wake_ticket_secret
    ADD CONSTRAINT wake_ticket_secret_pkey PRIMARY KEY (id);

insert into pgflight.wake_ticket_secret default values;

commit;
