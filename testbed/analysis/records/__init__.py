"""The consumer group's records, in Spark: processings against the producers' acks (lost, duplicated, late),
availability gaps, invariants over batches and commits, effects in the user's store."""
