"""Pure analysis: HLO reading, counts per program and per op, roofline maths, trace reading, the verdict,
statistics and hints. No JAX, no pytest: everything here works on text and numbers."""
