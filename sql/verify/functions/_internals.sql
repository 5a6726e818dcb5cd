-- Verify pgflight:functions/_internals
select 'pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb)'::regprocedure;
select 'pgflight._notify_ready()'::regprocedure;
select 'pgflight._opt_num(jsonb, text, double precision)'::regprocedure;
select 'pgflight._opt_text(jsonb, text, text)'::regprocedure;
select 'pgflight._require_positive(text, double precision)'::regprocedure;
select 'pgflight._backoff_s(integer, jsonb)'::regprocedure;
select 'pgflight._reject_write(bigint, bigint, text)'::regprocedure;
select 'pgflight._lock_held(bigint, bigint, text, boolean)'::regprocedure;
