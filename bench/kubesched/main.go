// kubesched: kube-scheduler's side of the extender protocol for the benchmarks (stdlib only).
//
//	kubesched cycle ...     the scheduling and binding cycles against an extender (cycle.go)
//	kubesched verbs ...     one client timing each verb over keep-alive (verbs.go)
//	kubesched extender ...  a Go extender answering names-only filter and prioritize (extender.go)
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
)

func flagSet(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ExitOnError)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kubesched cycle|verbs|extender [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "cycle":
		err = runCycle(os.Args[2:])
	case "verbs":
		err = runVerbs(os.Args[2:])
	case "extender":
		err = runExtender(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func listen(addr string) (net.Listener, error) {
	return net.Listen("tcp", addr)
}
