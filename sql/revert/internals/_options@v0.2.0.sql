-- Revert pgflight:internals/_options@v0.2.0
begin;
set local role pgflight_owner;
drop function pgflight._bad_child_options(jsonb);
drop function pgflight._backoff_s(integer, jsonb);
drop function pgflight._require_positive(text, double precision);
drop function pgflight._opt_text(jsonb, text, text);
drop function pgflight._opt_num(jsonb, text, double precision);
commit;
