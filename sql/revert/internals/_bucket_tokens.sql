-- Revert pgflight:internals/_bucket_tokens
begin;
set local role pgflight_owner;
drop function pgflight._bucket_tokens(double precision, timestamp with time zone, double precision, double precision, timestamp with time zone);
commit;
