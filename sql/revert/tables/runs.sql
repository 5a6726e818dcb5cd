begin;
drop table pgflight.runs;

commit;
