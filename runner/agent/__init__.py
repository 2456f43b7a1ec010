"""The shared Strands agent: a model per backend (`models`), one run under limits with every
model and tool call kept (`run`, `limits`), grading what it said and did (`grading`), and the
tasks the commands give it: the check's plain answer and tool call (`checks`), demo 1's counting
(`counting`), demo 2's orchestration (`orchestration`), and the quality set: its generated tasks
(`tasks`) and their run and grading (`quality`).

Imports `runner.measure`, `runner.cloud` and `runner.core`.
"""
