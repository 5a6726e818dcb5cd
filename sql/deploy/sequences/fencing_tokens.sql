-- Deploy pgflight:sequences/fencing_tokens

begin;

set local role pgflight_owner;

CREATE SEQUENCE pgflight.fencing_tokens
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

COMMENT ON SEQUENCE pgflight.fencing_tokens IS 'Fencing tokens: a fresh, strictly increasing value at every claim, across all attempts.';

commit;
