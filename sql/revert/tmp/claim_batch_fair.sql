-- Revert pgflight:tmp/claim_batch_fair
-- (temporary change; the reworked functions/claim_batch will carry the real revert)
select 1;
