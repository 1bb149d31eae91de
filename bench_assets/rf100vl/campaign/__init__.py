"""Campaign: how long each partition takes (the cost model), longest-first lane plans, a campaign's predicted
makespan (`bench plan`) and where it stands (`bench status`, the coverage check). Pure apart from reading
BENCH_HOME; builds on the stages below it."""
