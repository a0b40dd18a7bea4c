package main

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"
)

func TestUniformStaysWithinJitter(t *testing.T) {
	s := shape{delay: 10 * time.Millisecond, jitter: 5 * time.Millisecond, dist: "uniform", reorder: true}
	r := rand.New(rand.NewSource(1))
	lo, hi := time.Hour, time.Duration(0)
	for i := 0; i < 10000; i++ {
		d := s.sample(r)
		if d < lo {
			lo = d
		}
		if d > hi {
			hi = d
		}
	}
	if lo < 5*time.Millisecond || hi > 15*time.Millisecond || lo > 5200*time.Microsecond || hi < 14800*time.Microsecond {
		t.Fatalf("uniform 10ms +- 5ms drew from %v to %v", lo, hi)
	}
}

func TestNormalNeverNegative(t *testing.T) {
	s := shape{delay: time.Millisecond, jitter: 10 * time.Millisecond, dist: "normal"}
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 10000; i++ {
		if s.sample(r) < 0 {
			t.Fatal("negative delay")
		}
	}
}

type verdicts struct {
	mu    sync.Mutex
	order []uint32
	drops int
}

func (v *verdicts) set(id uint32, verdict int) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if verdict == verdictDrop {
		v.drops++
	} else {
		v.order = append(v.order, id)
	}
	return nil
}

func (v *verdicts) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.order) + v.drops
}

func runLine(t *testing.T, s shape, n int) *verdicts {
	v := &verdicts{}
	l := newLine(s, 3, v.set)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.run(ctx)
	for i := 0; i < n; i++ {
		l.arrive(uint32(i+1), time.Now())
		time.Sleep(50 * time.Microsecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for v.count() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if v.count() != n {
		t.Fatalf("%d of %d packets got a verdict", v.count(), n)
	}
	return v
}

func TestNoReorderKeepsOrder(t *testing.T) {
	v := runLine(t, shape{delay: 3 * time.Millisecond, jitter: 3 * time.Millisecond, reorder: false}, 300)
	for i, id := range v.order {
		if id != uint32(i+1) {
			t.Fatalf("packet %d left at place %d", id, i+1)
		}
	}
}

func TestJitterReorders(t *testing.T) {
	v := runLine(t, shape{delay: 3 * time.Millisecond, jitter: 3 * time.Millisecond, reorder: true}, 300)
	for i, id := range v.order {
		if id != uint32(i+1) {
			return
		}
	}
	t.Fatal("300 packets with 3 ms jitter 50 us apart all left in order")
}

func TestLossDropsAboutThatShare(t *testing.T) {
	v := runLine(t, shape{loss: 0.3}, 2000)
	if v.drops < 520 || v.drops > 680 {
		t.Fatalf("30%% loss dropped %d of 2000", v.drops)
	}
}

func TestDrainReleasesEverythingHeld(t *testing.T) {
	v := &verdicts{}
	l := newLine(shape{delay: time.Hour}, 4, v.set)
	for i := 1; i <= 10; i++ {
		l.arrive(uint32(i), time.Now())
	}
	if got := l.drain(); got != 10 || v.count() != 10 {
		t.Fatalf("drain released %d, verdicts %d", got, v.count())
	}
	l.arrive(11, time.Now())
	if v.count() != 11 {
		t.Fatal("a packet after the drain was held")
	}
}

func TestHistQuantiles(t *testing.T) {
	h := newHist()
	for i := 1; i <= 100; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	s := h.summary()
	if s.N != 100 || s.P50 < 50000 || s.P50 > 50020 || s.Max != 100000 || s.P5 < 5000 || s.P5 > 5020 {
		t.Fatalf("summary %+v", s)
	}
}
