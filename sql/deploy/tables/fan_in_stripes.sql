-- Deploy pgflight:tables/fan_in_stripes

begin;

set local role pgflight_owner;

CREATE TABLE pgflight.fan_in_stripes (
    parent_id bigint NOT NULL,
    stripe smallint NOT NULL,
    pending integer NOT NULL,
    allotted integer NOT NULL,
    CONSTRAINT pending_is_not_negative CHECK ((pending >= 0)),
    CONSTRAINT pending_within_allotted CHECK ((pending <= allotted))
)
WITH (fillfactor='50');

COMMENT ON TABLE pgflight.fan_in_stripes IS 'Striped fan-in counter: pending children of parent_id counted on this stripe (of allotted at spawn). The parent''s steps.children_pending counts the allotment of each stripe not yet dry, plus the children counted on no stripe; it reaches zero when the last child ends.';

ALTER TABLE ONLY pgflight.fan_in_stripes
    ADD CONSTRAINT fan_in_stripes_pkey PRIMARY KEY (parent_id, stripe);

commit;
