-- Revert pgflight:internals/_price_usd
begin;
set local role pgflight_owner;
drop function pgflight._price_usd(text, jsonb);
commit;
