module scheduler-extender/bench/kubesched

go 1.22
