"""The verdict and what explains it: the pass/fail rule, hints, the kernel census, the op-by-op diff."""
