"""What the front doors share: their common flags and how a command finds its backends (the
stack outputs, the forwards, `--endpoint`, Bedrock, the embedded model) in `session`; one way to
run a measuring command, save its evidence, print its table and exit (0, 1 when nothing counted,
2 on bad input, 130 after Ctrl-C).

Imports any package of the runner; only the front doors import it.
"""
