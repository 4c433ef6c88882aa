"""The roofline model: ceilings, live and first-touch terms, the cache state, the per-op model."""
