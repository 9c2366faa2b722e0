-- Retention deletes the fair keys' turns no dispatch needs any more (at or before their
-- queue's virtual now): found by this range, not by reading every key's row.
CREATE INDEX tenure_fair_turns ON tenure_fair (queue, next_vt);
