-- Revert pgflight:views/dead_letters
begin;
set local role pgflight_owner;
drop view pgflight.dead_letters;
commit;
