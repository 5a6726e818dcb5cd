begin;
drop table pgflight.settings;
commit;
