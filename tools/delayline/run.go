package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	nfqueue "github.com/florianl/go-nfqueue/v2"
	"github.com/mdlayher/netlink"
)

type runOpts struct {
	queue  uint
	shape  shape
	status string
	seed   uint64
	maxLen uint
}

func parseRun(args []string) (runOpts, error) {
	var o runOpts
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.UintVar(&o.queue, "queue", 0, "NFQUEUE queue number (required, 1-65535)")
	fs.DurationVar(&o.shape.delay, "delay", 0, "mean hold time per packet (e.g. 25ms)")
	fs.DurationVar(&o.shape.jitter, "jitter", 0, "spread around the delay")
	fs.StringVar(&o.shape.dist, "dist", "uniform", "uniform (delay +- jitter, flat) or normal (sigma = jitter)")
	fs.Float64Var(&o.shape.loss, "loss", 0, "probability of dropping a packet, 0-1")
	noReorder := fs.Bool("no-reorder", false, "never release a packet before an earlier one")
	fs.StringVar(&o.status, "status", "", "write counts and the achieved delay here, as JSON")
	fs.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	fs.UintVar(&o.maxLen, "max-held", 65536, "kernel queue length; beyond it packets pass undelayed")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.shape.reorder = !*noReorder
	switch {
	case fs.NArg() > 0:
		return o, errors.New("unexpected argument " + fs.Arg(0))
	case o.queue < 1 || o.queue > 65535:
		return o, errors.New("--queue must be 1-65535")
	case o.shape.delay < 0 || o.shape.jitter < 0:
		return o, errors.New("--delay and --jitter must not be negative")
	case o.shape.loss < 0 || o.shape.loss > 1:
		return o, errors.New("--loss is a probability, 0-1")
	case o.shape.dist != "uniform" && o.shape.dist != "normal":
		return o, errors.New("--dist is uniform or normal")
	}
	return o, nil
}

// open binds the queue. Fail-open: when the kernel's queue is full, packets pass undelayed rather
// than being dropped (a delay fault must not turn into a partition). GSO: large segments stay
// whole, which is cheaper and delays them the same.
func open(queue uint, maxLen uint) (*nfqueue.Nfqueue, error) {
	cfg := nfqueue.Config{
		NfQueue:      uint16(queue),
		MaxQueueLen:  uint32(maxLen),
		Copymode:     nfqueue.NfQnlCopyMeta,
		Flags:        nfqueue.NfQaCfgFlagFailOpen | nfqueue.NfQaCfgFlagGSO,
		WriteTimeout: time.Second,
	}
	nf, err := nfqueue.Open(&cfg)
	if err != nil {
		return nil, err
	}
	// Room for bursts: a packet the socket cannot take is let through at once (fail-open), and
	// NoENOBUFS keeps that from being an error that stops our receive loop.
	_ = nf.Con.SetReadBuffer(8 << 20)
	_ = nf.SetOption(netlink.NoENOBUFS, true)
	return nf, nil
}

func cmdRun(args []string) int {
	o, err := parseRun(args)
	if err != nil {
		return fail(2, "%v", err)
	}
	nf, err := open(o.queue, o.maxLen)
	if err != nil {
		return fail(1, "cannot open NFQUEUE: %v", err)
	}
	defer nf.Close()
	ln := newLine(o.shape, o.seed, nf.SetVerdict)
	st := &reporter{path: o.status, opts: o, line: ln, started: time.Now()}

	recvCtx, stopRecv := context.WithCancel(context.Background())
	defer stopRecv()
	hook := func(a nfqueue.Attribute) int {
		if a.PacketID != nil {
			ln.arrive(*a.PacketID, time.Now())
		}
		return 0
	}
	onErr := func(e error) int {
		if recvCtx.Err() != nil {
			return 1
		}
		st.errors.Add(1)
		return 0
	}
	if err := nf.RegisterWithErrorFunc(recvCtx, hook, onErr); err != nil {
		return fail(1, "cannot bind NFQUEUE queue %d: %v", o.queue, err)
	}
	relCtx, stopRel := context.WithCancel(context.Background())
	go ln.run(relCtx)
	st.write()
	waitForEnd(st)
	// The clean end: everything held goes now, then the queue is unbound (unbinding would drop
	// whatever the kernel still holds for us).
	st.drained = ln.drain()
	stopRel()
	stopRecv()
	st.stopped = true
	st.write()
	return 0
}

// waitForEnd writes the status every second and on SIGUSR1, until SIGTERM or SIGINT.
func waitForEnd(st *reporter) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGUSR1 {
				st.write()
				continue
			}
			return
		case <-tick.C:
			st.write()
		}
	}
}

func cmdCheck(args []string) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	q := fs.Uint("queue", 0, "queue number to bind once (1-65535)")
	if err := fs.Parse(args); err != nil || *q < 1 || *q > 65535 {
		return fail(2, "check needs --queue 1-65535")
	}
	nf, err := open(*q, 16)
	if err != nil {
		return fail(1, "cannot open NFQUEUE: %v", err)
	}
	defer nf.Close()
	ctx, cancel := context.WithCancel(context.Background())
	err = nf.RegisterWithErrorFunc(ctx, func(nfqueue.Attribute) int { return 0 }, func(error) int { return 1 })
	cancel()
	if err != nil {
		return fail(1, "cannot bind NFQUEUE queue %d: %v", *q, err)
	}
	out, _ := json.Marshal(map[string]any{"nfqueue": true, "queue": *q, "version": version})
	os.Stdout.Write(append(out, '\n'))
	return 0
}
