begin;
drop table pgflight.workspaces;

commit;
