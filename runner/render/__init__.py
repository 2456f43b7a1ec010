"""Rendering evidence: one table module per command (`bench`, `check`, `cost`, `counting`,
`forward`, `images`, `orchestrator`, `sweep`, `up`, found through `tables.renderer_for`), the
plots (`plots`) and the self-contained HTML and Markdown report (`page`). Everything here reads
evidence; nothing measures or calls AWS.

Imports the packages below it (`agent`, `measure`, `cloud`, `core`), never `cli` or a command.
"""
