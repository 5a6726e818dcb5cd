begin;
drop table pgflight.workers;

commit;
