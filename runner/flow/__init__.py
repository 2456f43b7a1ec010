"""The whole survey as one run (`python -m runner.survey`): its folder, its steps and its way back
to zero. It sits above the other front doors: each step calls a command's own `run(argv)` as a
user would type it, with its evidence written into the survey's folder, so the survey is the
step-by-step commands in the right order and never a second copy of them.

- `folder`: one results folder per survey (its state file, evidence, logs, placement, forwards);
- `options`: what the user asked for, kept in the folder so `--resume` asks again for nothing;
- `steps`: running one step (its output kept in a log, its time, its outcome, its evidence);
- `state`: the survey's state file and the bookkeeping every step goes through (progress, what bills);
- `plan`: the preflight, once, and what it decides (what runs, what is deployed, what stood before);
- `up_steps`: the `up` step (and the model import) and what it brought up;
- `measure_steps`: the measuring steps over the ready backends;
- `late_round`: the backends whose images were still building, measured once they are ready;
- `report_steps`: the cost and report steps;
- `way_back`: keep or tear down what this run created, then the closing sweep;
- `survey_run`: the order of the steps, and how a run ends (passed, Ctrl-C, a fault of its own).
"""
