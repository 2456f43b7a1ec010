"""Bringing the app's stacks up for `runner.up` and the survey: what will run where before anything
bills (`preflight`), what only the account knows (`account_facts`), the store's copy of a model
(`store`), every chosen stack at once (`all_stacks`) and one stack to its end (`one_stack`), each
backend watched to ready or to why not (`watch`)."""
