-- Chains (tenure.core.chains): a link carries its chain -- the later links, catch and finally -- as
-- JSON text, followed by the store in the transaction that ends the link. NULL: a plain job.
ALTER TABLE {s}.tenure_jobs ADD COLUMN chain text;
