"""The roofline model: ceilings, live and first-touch terms, the cache state, the per-op model and op families,
exposed communication, recorded profiles summarized. Imports program/ and runs/, never verdict/."""
