select * from pgflight.approvals where false;
