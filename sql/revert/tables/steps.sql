begin;
drop table pgflight.steps;

commit;
