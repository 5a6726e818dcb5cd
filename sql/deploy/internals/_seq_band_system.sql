-- Deploy pgflight:internals/_seq_band_system

begin;

set local role pgflight_owner;

CREATE OR REPLACE FUNCTION pgflight._seq_band_system() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ select 2000 $$;

COMMENT ON FUNCTION pgflight._seq_band_system() IS 'Internal: the first seq of the transcript''s system blocks (record_trace''s default: the next free seq from here).';

REVOKE ALL ON FUNCTION pgflight._seq_band_system() FROM PUBLIC;

commit;
