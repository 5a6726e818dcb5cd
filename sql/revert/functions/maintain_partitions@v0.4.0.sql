-- Revert pgflight:functions/maintain_partitions@v0.4.0
begin;
set local role pgflight_owner;
drop function pgflight.maintain_partitions(integer);
commit;
