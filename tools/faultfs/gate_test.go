package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// admit runs one operation through the gate in the background and returns its answer.
func admit(g *gate, cancel <-chan struct{}, k opKind) <-chan syscall.Errno {
	done := make(chan syscall.Errno, 1)
	go func() {
		e := g.enter(cancel, k)
		if e == 0 {
			g.leave()
		}
		done <- e
	}()
	return done
}

func expectHeld(t *testing.T, done <-chan syscall.Errno) {
	t.Helper()
	select {
	case e := <-done:
		t.Fatalf("operation completed while frozen: %v", e)
	case <-time.After(50 * time.Millisecond):
	}
}

func expectAnswer(t *testing.T, done <-chan syscall.Errno, want syscall.Errno) {
	t.Helper()
	select {
	case e := <-done:
		if e != want {
			t.Fatalf("answer %v, want %v", e, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("operation still held")
	}
}

func TestFreezeHoldsAndThawReleases(t *testing.T) {
	g := newGate()
	if err := g.freeze(time.Second); err != nil {
		t.Fatal(err)
	}
	done := admit(g, nil, opWrite)
	expectHeld(t, done)
	if !g.thaw() {
		t.Fatal("thaw: was not frozen")
	}
	expectAnswer(t, done, 0)
	if g.thaw() {
		t.Fatal("thaw twice")
	}
}

func TestOperationHeldAcrossDropIsRefused(t *testing.T) {
	g := newGate()
	g.freeze(time.Second)
	done := admit(g, nil, opWrite)
	expectHeld(t, done)
	ran := false
	if err := g.quiet(func() { ran = true }); err != nil || !ran {
		t.Fatalf("quiet: %v", err)
	}
	g.thaw()
	expectAnswer(t, done, syscall.EIO)
	if g.refused.Load() != 1 || g.status().Drops != 1 {
		t.Fatalf("refused %d, drops %d", g.refused.Load(), g.status().Drops)
	}
	expectAnswer(t, admit(g, nil, opWrite), 0) // later operations run
}

func TestKilledCallerIsInterrupted(t *testing.T) {
	g := newGate()
	g.freeze(time.Second)
	cancel := make(chan struct{})
	done := admit(g, cancel, opFsync)
	expectHeld(t, done)
	close(cancel)
	expectAnswer(t, done, syscall.EINTR)
}

func TestFreezeWaitsForOperationsInFlight(t *testing.T) {
	g := newGate()
	if e := g.enter(nil, opFsync); e != 0 {
		t.Fatal(e)
	}
	if err := g.freeze(30 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "1 operations") {
		t.Fatalf("freeze with one in flight: %v", err)
	}
	if err := g.quiet(func() {}); err == nil {
		t.Fatal("drop allowed with an operation in flight")
	}
	go func() { time.Sleep(20 * time.Millisecond); g.leave() }()
	if err := g.freeze(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := g.quiet(func() {}); err != nil {
		t.Fatal(err)
	}
}

func TestDropNeedsFreeze(t *testing.T) {
	if err := newGate().quiet(func() {}); err == nil {
		t.Fatal("drop allowed without freeze")
	}
}

func TestLatencyFault(t *testing.T) {
	g := newGate()
	var slept []time.Duration
	g.sleep = func(d time.Duration, _ <-chan struct{}) bool { slept = append(slept, d); return true }
	f, err := newFaults(faultSpec{DelayMs: 20, JitterMs: 5, DelayOps: []string{"fsync"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	g.faults.Store(f)
	for _, k := range []opKind{opRead, opWrite, opFsync, opOther} {
		if g.enter(nil, k) == 0 {
			g.leave()
		}
	}
	if len(slept) != 1 || slept[0] < 20*time.Millisecond || slept[0] >= 25*time.Millisecond {
		t.Fatalf("delays %v, want one of 20-25 ms for the fsync", slept)
	}
	if g.delayed.Load() != 1 {
		t.Fatalf("delayed count %d", g.delayed.Load())
	}
}

func TestDelayAllKinds(t *testing.T) {
	f, err := newFaults(faultSpec{DelayMs: 1, DelayOps: []string{"all"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for k := range opKinds {
		if !f.delayOn[k] {
			t.Fatalf("%s not delayed by all", kindNames[k])
		}
	}
}

func TestErrorFaultAndWindow(t *testing.T) {
	g := newGate()
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	f, err := newFaults(faultSpec{Error: "ENOSPC", ErrorOps: []string{"write"}, Seconds: 10}, now)
	if err != nil {
		t.Fatal(err)
	}
	g.faults.Store(f)
	if e := g.inject(opWrite); e != syscall.ENOSPC {
		t.Fatalf("write: %v", e)
	}
	if e := g.inject(opFsync); e != 0 {
		t.Fatalf("fsync: %v", e)
	}
	now = now.Add(11 * time.Second)
	if e := g.inject(opWrite); e != 0 {
		t.Fatalf("after the window: %v", e)
	}
	if g.status().Faults != nil {
		t.Fatal("faults still shown after their window")
	}
}

func TestErrorProbability(t *testing.T) {
	g := newGate()
	f, _ := newFaults(faultSpec{Error: "EIO", ErrorOps: []string{"fsync"}, Probability: 0.5}, time.Now())
	g.faults.Store(f)
	n := 0
	for range 4000 {
		if g.inject(opFsync) != 0 {
			n++
		}
	}
	if n < 1700 || n > 2300 {
		t.Fatalf("%d of 4000 failed at p=0.5", n)
	}
}

func TestBadFaults(t *testing.T) {
	for _, spec := range []faultSpec{
		{DelayMs: -1, DelayOps: []string{"read"}},
		{DelayMs: 5},
		{DelayMs: 5, DelayOps: []string{"mkdir"}},
		{Error: "EPERM", ErrorOps: []string{"write"}},
		{Error: "EIO"},
		{Error: "EIO", ErrorOps: []string{"read"}},
		{Error: "EIO", ErrorOps: []string{"write"}, Probability: 1.5},
	} {
		if _, err := newFaults(spec, time.Now()); err == nil {
			t.Fatalf("accepted %+v", spec)
		}
	}
}

func TestServedCounts(t *testing.T) {
	g := newGate()
	for _, k := range []opKind{opRead, opRead, opWrite, opFsync, opOther} {
		if g.enter(nil, k) == 0 {
			g.leave()
		}
	}
	ops := g.status().Ops
	if ops["read"] != 2 || ops["write"] != 1 || ops["fsync"] != 1 || ops["other"] != 1 {
		t.Fatalf("counts %v", ops)
	}
}
