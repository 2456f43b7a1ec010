"""Cost in one place: on-demand prices (`prices`: the Pricing API, the dated offline table as the
fallback, and what each way of serving is billed by), the purchase options beside on-demand
(`purchase`: EC2 Spot, Savings Plans, Bedrock's batch and service tiers and Provisioned
Throughput, each with its SKU, source API and date, live or from the recorded snapshots), the
pricing sums each written once (`arithmetic`: $ per million tokens, break-even against Bedrock, a month of instances, a job's
billable time, Custom Model Import's windows), what bills right now (`billing_now`: the rows of the
table `runner.up` ends with), the cost of what was measured by each backend's billing model
(`measured`: per load level, cold starts apart), the arithmetic of `runner.advise` (`advice`: a
workload's month on every measured option), and the rows those two write into evidence, typed
(`rows`: each read back through `from_json`, a file of another rows version refused in one line).

It sits below `runner.cloud` (whose watchers and preflight price what they bring up) and
`runner.measure` (a transform job prices itself), and above `runner.figures` (a level's figures,
read from its records) and `runner.workloads`: it may import those, `runner.core` and the catalog
only. It calls no AWS API of its own (the Pricing API's client is handed in by the front doors)
and draws no table (`runner.render` does).
"""
