package main

// The gate every file operation passes: freeze/thaw (the instant of a power cut), the disk faults
// (added latency, injected errors) and the counts of operations served.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type opKind int

const (
	opRead opKind = iota
	opWrite
	opFsync
	opOther
	opKinds
)

var kindNames = [opKinds]string{"read", "write", "fsync", "other"}

// faultSpec is a set of disk faults as the control protocol carries it.
type faultSpec struct {
	DelayMs     float64  `json:"delay_ms,omitempty"`
	JitterMs    float64  `json:"jitter_ms,omitempty"`
	DelayOps    []string `json:"delay_ops,omitempty"` // read, write, fsync, all
	Error       string   `json:"error,omitempty"`     // EIO or ENOSPC
	ErrorOps    []string `json:"error_ops,omitempty"` // write, fsync
	Probability float64  `json:"probability,omitempty"`
	Seconds     float64  `json:"seconds,omitempty"` // the window; 0: until cleared
}

// faults is a validated faultSpec, ready for the hot path.
type faults struct {
	spec    faultSpec
	delay   time.Duration
	jitter  time.Duration
	delayOn [opKinds]bool
	errno   syscall.Errno
	errorOn [opKinds]bool
	prob    float64
	until   time.Time // zero: no end
}

func kindsOf(names []string, allowed ...string) ([opKinds]bool, error) {
	var on [opKinds]bool
	for _, name := range names {
		if !slices.Contains(allowed, name) {
			return on, fmt.Errorf("operation kind %q is not one of %v", name, allowed)
		}
		if name == "all" {
			for k := range on {
				on[k] = true
			}
			continue
		}
		on[slices.Index(kindNames[:], name)] = true
	}
	return on, nil
}

func newFaults(spec faultSpec, now time.Time) (*faults, error) {
	f := &faults{spec: spec, prob: spec.Probability}
	if spec.DelayMs < 0 || spec.JitterMs < 0 || spec.Seconds < 0 {
		return nil, errors.New("delay_ms, jitter_ms and seconds must not be negative")
	}
	f.delay = time.Duration(spec.DelayMs * float64(time.Millisecond))
	f.jitter = time.Duration(spec.JitterMs * float64(time.Millisecond))
	var err error
	if f.delayOn, err = kindsOf(spec.DelayOps, "read", "write", "fsync", "all"); err != nil {
		return nil, err
	}
	if (f.delay > 0 || f.jitter > 0) && len(spec.DelayOps) == 0 {
		return nil, errors.New("delay_ms needs delay_ops (read, write, fsync or all)")
	}
	switch spec.Error {
	case "":
	case "EIO":
		f.errno = syscall.EIO
	case "ENOSPC":
		f.errno = syscall.ENOSPC
	default:
		return nil, fmt.Errorf("error must be EIO or ENOSPC (got %q)", spec.Error)
	}
	if f.errorOn, err = kindsOf(spec.ErrorOps, "write", "fsync"); err != nil {
		return nil, err
	}
	if f.errno != 0 && len(spec.ErrorOps) == 0 {
		return nil, errors.New("error needs error_ops (write, fsync)")
	}
	if f.errno != 0 && f.prob == 0 {
		f.prob = 1
	}
	if f.prob < 0 || f.prob > 1 {
		return nil, fmt.Errorf("probability must be within 0-1 (got %g)", f.prob)
	}
	if spec.Seconds > 0 {
		f.until = now.Add(time.Duration(spec.Seconds * float64(time.Second)))
	}
	return f, nil
}

type gate struct {
	mu       sync.Mutex
	frozen   bool
	thawed   chan struct{} // closed at thaw
	drained  chan struct{} // closed when the last operation in flight leaves a frozen gate
	epoch    uint64        // counts drops: an operation held across a drop never runs
	inflight int

	faults   atomic.Pointer[faults]
	served   [opKinds]atomic.Uint64
	delayed  atomic.Uint64
	injected atomic.Uint64
	refused  atomic.Uint64 // held across a drop and answered EIO
	now      func() time.Time
	sleep    func(d time.Duration, cancel <-chan struct{}) bool
}

func newGate() *gate {
	return &gate{now: time.Now, sleep: sleepOrCancel}
}

func sleepOrCancel(d time.Duration, cancel <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-cancel:
		return false
	}
}

// active returns the faults in force, clearing them once their window is over.
func (g *gate) active() *faults {
	f := g.faults.Load()
	if f != nil && !f.until.IsZero() && g.now().After(f.until) {
		g.faults.CompareAndSwap(f, nil)
		return nil
	}
	return f
}

// enter admits one operation: after its added latency, and not while the gate is frozen. OK
// means the operation may run and must call leave; anything else is its answer.
func (g *gate) enter(cancel <-chan struct{}, k opKind) syscall.Errno {
	if f := g.active(); f != nil && f.delayOn[k] {
		d := f.delay
		if f.jitter > 0 {
			d += time.Duration(rand.Int64N(int64(f.jitter)))
		}
		g.delayed.Add(1)
		if !g.sleep(d, cancel) {
			return syscall.EINTR
		}
	}
	g.mu.Lock()
	for g.frozen {
		thawed, epoch := g.thawed, g.epoch
		g.mu.Unlock()
		select {
		case <-thawed:
		case <-cancel: // the caller was killed while held: the operation never happened
			return syscall.EINTR
		}
		g.mu.Lock()
		if g.epoch != epoch { // power was lost while it waited
			g.mu.Unlock()
			g.refused.Add(1)
			return syscall.EIO
		}
	}
	g.inflight++
	g.mu.Unlock()
	g.served[k].Add(1)
	return 0
}

func (g *gate) leave() {
	g.mu.Lock()
	g.inflight--
	if g.inflight == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
	g.mu.Unlock()
}

// inject returns the error to answer an admitted operation with instead of running it, or 0.
func (g *gate) inject(k opKind) syscall.Errno {
	f := g.active()
	if f == nil || f.errno == 0 || !f.errorOn[k] {
		return 0
	}
	if f.prob < 1 && rand.Float64() >= f.prob {
		return 0
	}
	g.injected.Add(1)
	return f.errno
}

// freeze stops admitting operations and waits up to `timeout` for those in flight to finish.
// The gate stays frozen when they do not (thaw releases it).
func (g *gate) freeze(timeout time.Duration) error {
	g.mu.Lock()
	if !g.frozen {
		g.frozen = true
		g.thawed = make(chan struct{})
	}
	if g.inflight == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.drained == nil {
		g.drained = make(chan struct{})
	}
	drained := g.drained
	g.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-time.After(timeout):
		g.mu.Lock()
		n := g.inflight
		g.mu.Unlock()
		return fmt.Errorf("%d operations still in flight after %s; still frozen (thaw releases it)", n, timeout)
	}
}

// quiet runs fn while frozen with nothing in flight, and counts it as a power loss: operations
// held now will be refused at thaw.
func (g *gate) quiet(fn func()) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.frozen {
		return errors.New("not frozen: freeze first")
	}
	if g.inflight > 0 {
		return fmt.Errorf("%d operations still in flight: freeze again and wait", g.inflight)
	}
	fn()
	g.epoch++
	return nil
}

// thaw admits operations again; it reports whether the gate was frozen.
func (g *gate) thaw() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.frozen {
		return false
	}
	g.frozen = false
	close(g.thawed)
	return true
}

type gateStatus struct {
	Frozen   bool              `json:"frozen"`
	Drops    uint64            `json:"drops"`
	InFlight int               `json:"in_flight"`
	Ops      map[string]uint64 `json:"ops"`
	Delayed  uint64            `json:"delayed"`
	Injected uint64            `json:"errors_injected"`
	Refused  uint64            `json:"refused"`
	Faults   *faultSpec        `json:"faults"`
}

func (g *gate) status() gateStatus {
	g.mu.Lock()
	out := gateStatus{Frozen: g.frozen, Drops: g.epoch, InFlight: g.inflight}
	g.mu.Unlock()
	out.Ops = make(map[string]uint64, opKinds)
	for k := range opKinds {
		out.Ops[kindNames[k]] = g.served[k].Load()
	}
	out.Delayed, out.Injected, out.Refused = g.delayed.Load(), g.injected.Load(), g.refused.Load()
	if f := g.active(); f != nil {
		spec := f.spec
		out.Faults = &spec
	}
	return out
}
