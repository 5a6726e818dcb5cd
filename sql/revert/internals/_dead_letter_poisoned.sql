-- Revert pgflight:internals/_dead_letter_poisoned
begin;
set local role pgflight_owner;
drop function pgflight._dead_letter_poisoned(bigint, text, text, text);
commit;
