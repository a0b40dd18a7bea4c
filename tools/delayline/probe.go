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

// cmdFlood sends 64-byte UDP datagrams to addr at a steady rate (for measuring how many packets
// per second the line can hold); prints the count sent and the seconds it took, as JSON.
func cmdFlood(args []string) int {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	addr := fs.String("addr", "", "host:port to send to")
	rate := fs.Int("rate", 1000, "datagrams per second")
	secs := fs.Duration("for", 3*time.Second, "how long")
	if err := fs.Parse(args); err != nil || *addr == "" || *rate < 1 {
		return fail(2, "flood needs --addr host:port and --rate >= 1")
	}
	c, err := net.Dial("udp", *addr)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer c.Close()
	// Held packets still count against the sender's socket buffer: a big one (root may force it
	// past wmem_max) so that the flood measures the line, not the buffer.
	if raw, err := c.(*net.UDPConn).SyscallConn(); err == nil {
		_ = raw.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, 64<<20)
		})
	}
	msg := make([]byte, 64)
	sent, errs := 0, 0
	t0 := time.Now()
	for {
		el := time.Since(t0)
		if el >= *secs {
			break
		}
		for due := int(el.Seconds() * float64(*rate)); sent < due; sent++ {
			if _, err := c.Write(msg); err != nil {
				errs++
			}
		}
		time.Sleep(200 * time.Microsecond)
	}
	out, _ := json.Marshal(map[string]any{"sent": sent, "errors": errs, "seconds": time.Since(t0).Seconds()})
	os.Stdout.Write(append(out, '\n'))
	return 0
}
