begin;
drop table pgflight.step_attempts;
drop sequence pgflight.fencing_tokens;
commit;
