"""The whole survey as one run (`python -m runner.survey`): its folder, its steps and its way back
to zero. It sits above the other front doors: each step calls a command's own `run(argv)` as a
user would type it, with its evidence written into the survey's folder, so the survey is the
step-by-step commands in the right order and never a second copy of them.

- `folder`: one results folder per survey (its state file, evidence, logs, placement, forwards);
- `options`: what the user asked for, kept in the folder so `--resume` asks again for nothing;
- `steps`: running one step (its output kept in a log, its time, its outcome, its evidence);
- `survey_run`: the order of the steps, progress, Ctrl-C, teardown, the closing sweep.
"""
