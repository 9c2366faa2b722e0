"""The pure rules: states, retries, batches, chains, guards, retention, schedules, payloads,
results, errors, the causes of an end, and the records that cross the store seam (with their
JSON codec and the words a reader sees). Nothing here imports tenure from outside `core`, does
I/O or keeps state between calls: what it says can be trusted without reading the rest."""
