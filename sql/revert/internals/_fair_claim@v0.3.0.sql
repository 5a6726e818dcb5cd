-- Revert pgflight:internals/_fair_claim@v0.3.0
begin;
set local role pgflight_owner;
drop function pgflight._claim_fair(bigint, integer, double precision, text[], boolean, timestamptz, bigint[]);
drop function pgflight._bucket_tokens(double precision, timestamptz, double precision, double precision, timestamptz);
drop function pgflight._queued_recipes();
drop function pgflight._ready_lanes(text[]);
drop function pgflight._claim_lane(bigint, bigint, text, integer, double precision, boolean, timestamptz);
drop function pgflight._lease_attempts(bigint, bigint[], double precision, boolean, timestamptz);
commit;
