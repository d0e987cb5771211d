"""Tasks: the schema, sources, pool batches and family-disjoint splits (issue 4)."""
