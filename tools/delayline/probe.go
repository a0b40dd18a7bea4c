package main

import (
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"syscall"
	"time"
)

// cmdProbe times TCP connects to addr: the SYN out and the SYN-ACK (or, from a closed port, the
// RST) back is one round trip, and needs no server on the far side. A closed port is the polite
// target: a database's port would count every probe as a failed client.
func cmdProbe(args []string) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	addr := fs.String("addr", "", "host:port to connect to")
	count := fs.Int("count", 10, "round trips to time")
	interval := fs.Duration("interval", 20*time.Millisecond, "pause between probes")
	timeout := fs.Duration("timeout", 3*time.Second, "give up on one probe after this")
	if err := fs.Parse(args); err != nil || *addr == "" || *count < 1 {
		return fail(2, "probe needs --addr host:port and --count >= 1")
	}
	var rtts []float64
	lost := 0
	for i := 0; i < *count; i++ {
		if i > 0 {
			time.Sleep(*interval)
		}
		t0 := time.Now()
		c, err := net.DialTimeout("tcp", *addr, *timeout)
		took := time.Since(t0)
		if err == nil {
			c.Close()
		}
		if err == nil || errors.Is(err, syscall.ECONNREFUSED) {
			rtts = append(rtts, round1(float64(took)/float64(time.Microsecond)))
		} else {
			lost++
		}
	}
	out, _ := json.Marshal(map[string]any{"addr": *addr, "rtt_us": rtts, "lost": lost})
	os.Stdout.Write(append(out, '\n'))
	return 0
}
