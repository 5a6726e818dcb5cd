begin;
drop table pgflight.events;

commit;
