// cb-delayline: a userspace delay line for kernels without netem. iptables sends a link's
// packets to an NFQUEUE queue; this program holds each one for delay +- jitter, or drops it with
// a probability, then gives the kernel its verdict. See docs/delayline.md.
//
//	cb-delayline run --queue N --delay 25ms [--jitter 5ms] [--dist uniform|normal] [--loss 0.01]
//	                 [--no-reorder] [--status FILE] [--seed S]
//	cb-delayline check --queue N     bind the queue once and let go (is NFQUEUE usable here?)
//	cb-delayline probe --addr A:P    TCP connect round trips to A:P, as JSON
//	cb-delayline flood --addr A:P --rate R --for 3s    UDP at a steady rate (for measurements)
package main

import (
	"fmt"
	"os"
)

// Exit codes: 0 done, 1 the kernel refused us (no NFQUEUE, queue taken), 2 bad usage.
func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var code int
	switch os.Args[1] {
	case "run":
		code = cmdRun(os.Args[2:])
	case "check":
		code = cmdCheck(os.Args[2:])
	case "probe":
		code = cmdProbe(os.Args[2:])
	case "flood":
		code = cmdFlood(os.Args[2:])
	case "version":
		fmt.Println(version)
	default:
		usage()
	}
	os.Exit(code)
}

// version changes whenever the command line or the status file changes shape.
const version = "cb-delayline 1"

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cb-delayline run|check|probe|flood|version [options]; -h for options")
	os.Exit(2)
}

func fail(code int, format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "cb-delayline: "+format+"\n", args...)
	return code
}
