"""A run's saved files: where they live (layout), the verdict (result.json) and the measurements (metrics.json)."""
