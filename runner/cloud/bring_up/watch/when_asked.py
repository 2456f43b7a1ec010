"""The watch of a path where nothing runs until it is asked (a transform job, an import): once its
stack is deployed there is nothing more to see, and the record says what starts it."""

from __future__ import annotations

from runner.cloud.bring_up.watch.common import Watch


class TransformJobWhenAsked(Watch):
    waits_for = "nothing runs until a transform job: python -m runner.batch"


class ImportWhenAsked(Watch):
    waits_for = "weights bucket and role ready: python -m runner.model_import import"
