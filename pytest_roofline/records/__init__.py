"""The records of the current run: each kernel's record, a result as a report records it, its baseline check."""
