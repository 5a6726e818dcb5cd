-- Revert pgflight:functions/_internals
begin;
drop function pgflight._lock_held(bigint, bigint, text, boolean);
drop function pgflight._reject_write(bigint, bigint, text);
drop function pgflight._backoff_s(integer, jsonb);
drop function pgflight._require_positive(text, double precision);
drop function pgflight._opt_text(jsonb, text, text);
drop function pgflight._opt_num(jsonb, text, double precision);
drop function pgflight._notify_ready();
drop function pgflight._event(bigint, bigint, bigint, text, text, bigint, text, text, jsonb);
commit;
