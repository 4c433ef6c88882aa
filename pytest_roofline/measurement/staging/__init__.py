"""Staging a kernel for measuring, however its author jitted it: the rules for arguments and jit wrappers
(:mod:`.jitting`), a library's own jit wrapper measured as the program it compiles (:mod:`.library_jit`), and what
a staged kernel holds (:mod:`.staged`)."""
