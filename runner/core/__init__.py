"""What every part of the runner shares: typed faults and their one-line descriptions (`errors`),
the evidence file (`evidence`), what one timed request records (`records`), evidence read
back typed (`typed_json`), statistics (`stats`), the backends a run measures (`backends`),
files (`files`), loopback ports (`ports`), the console (`console`) and the process's one TLS context (`tls`).

Imports only the standard library, third-party libraries, the catalog and the measuring core
(`runner.timing`, whose faults are the runner's): never another package of the runner.
"""
