-- Deploy pgflight:sequences/claim_turns

begin;

set local role pgflight_owner;

CREATE SEQUENCE pgflight.claim_turns
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
    CYCLE;

COMMENT ON SEQUENCE pgflight.claim_turns IS 'The fair claim''s rotation counter (one value per claim_batch call).';

commit;
