-- Verify pgflight:tables/approvals_payload
select payload from pgflight.approvals where false;
