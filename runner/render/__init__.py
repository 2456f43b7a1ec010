"""Rendering evidence: one table module per command (`advise`, `ask`, `batch`, `bench`, `check`,
`cost`, `counting`, `forward`, `images`, `orchestrator`, `quality`, `sweep`, `up`, found through
`tables.renderer_for`), the report's headline (`headline`), the plots (`plots`) and the
self-contained HTML and Markdown report (`page`, `page.css`). Everything here reads evidence;
nothing measures or calls AWS.

Imports the packages below it (`agent`, `measure`, `cloud`, `core`), never `cli` or a command.
"""
