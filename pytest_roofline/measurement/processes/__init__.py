"""Measurements of programs that span processes (imports JAX): the peers and their lockstep."""
