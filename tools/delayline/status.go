package main

import (
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// reporter writes the line's counts and achieved delays as one JSON object, replacing the file
// atomically so a reader never sees half of it.
type reporter struct {
	path    string
	opts    runOpts
	line    *line
	started time.Time
	errors  atomic.Uint64
	drained int
	stopped bool
	mu      sync.Mutex
}

type status struct {
	Version       string  `json:"version"`
	PID           int     `json:"pid"`
	Queue         uint    `json:"queue"`
	DelayUs       int64   `json:"delay_us"`
	JitterUs      int64   `json:"jitter_us"`
	Dist          string  `json:"dist"`
	Loss          float64 `json:"loss"`
	Reorder       bool    `json:"reorder"`
	UptimeS       float64 `json:"uptime_s"`
	CPUS          float64 `json:"cpu_s"`
	Received      uint64  `json:"received"`
	Released      uint64  `json:"released"`
	Dropped       uint64  `json:"dropped"`
	Passed        uint64  `json:"passed"`
	HeldNow       int     `json:"held_now"`
	HeldMax       int     `json:"held_max"`
	VerdictErrors uint64  `json:"verdict_errors"`
	RecvErrors    uint64  `json:"recv_errors"`
	Drained       int     `json:"drained"`
	Stopped       bool    `json:"stopped"`
	AddedUs       summary `json:"added_us"`
	LateUs        summary `json:"late_us"`
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func (r *reporter) snapshot() status {
	l := r.line
	now, most := l.held()
	return status{
		Version: version, PID: os.Getpid(), Queue: r.opts.queue,
		DelayUs: r.opts.shape.delay.Microseconds(), JitterUs: r.opts.shape.jitter.Microseconds(),
		Dist: r.opts.shape.dist, Loss: r.opts.shape.loss, Reorder: r.opts.shape.reorder,
		UptimeS: round1(time.Since(r.started).Seconds()), CPUS: cpuSeconds(),
		Received: l.received.Load(), Released: l.released.Load(), Dropped: l.dropped.Load(),
		Passed: l.passed.Load(), HeldNow: now, HeldMax: most,
		VerdictErrors: l.verdictErrors.Load(), RecvErrors: r.errors.Load(),
		Drained: r.drained, Stopped: r.stopped,
		AddedUs: l.added.summary(), LateUs: l.late.summary(),
	}
}

func (r *reporter) write() {
	if r.path == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	data, err := json.Marshal(r.snapshot())
	if err != nil {
		return
	}
	tmp := r.path + ".tmp"
	if os.WriteFile(tmp, append(data, '\n'), 0o644) == nil {
		_ = os.Rename(tmp, r.path)
	}
}
