begin;
drop table pgflight.approvals;

commit;
