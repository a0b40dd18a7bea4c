package main

import (
	"container/heap"
	"context"
	"math/rand"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Verdicts as the kernel numbers them (NF_DROP, NF_ACCEPT).
const (
	verdictDrop   = 0
	verdictAccept = 1
)

// shape is what the line does to each packet: hold it for delay +- jitter, drawn from dist,
// and drop it with probability loss instead.
type shape struct {
	delay   time.Duration
	jitter  time.Duration
	dist    string // "uniform": delay +- jitter, flat (netem's default); "normal": sigma = jitter
	loss    float64
	reorder bool // false: a packet never leaves before one that came in earlier
}

func (s shape) sample(r *rand.Rand) time.Duration {
	d := s.delay
	if s.jitter > 0 {
		switch s.dist {
		case "normal":
			d += time.Duration(r.NormFloat64() * float64(s.jitter))
		default:
			d += time.Duration((2*r.Float64() - 1) * float64(s.jitter))
		}
	}
	if d < 0 {
		return 0
	}
	return d
}

type held struct {
	due     time.Time
	arrived time.Time
	id      uint32
	seq     uint64 // arrival order: equal due times leave in it
}

type queue []held

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].due.Equal(q[j].due) {
		return q[i].seq < q[j].seq
	}
	return q[i].due.Before(q[j].due)
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(held)) }
func (q *queue) Pop() any {
	old := *q
	last := old[len(old)-1]
	*q = old[:len(old)-1]
	return last
}

// line holds packets in a heap ordered by release time; one goroutine releases them when due.
type line struct {
	shape   shape
	verdict func(id uint32, v int) error

	mu      sync.Mutex
	q       queue
	lastDue time.Time
	seq     uint64
	rng     *rand.Rand
	maxHeld int

	wake     chan struct{}
	draining atomic.Bool

	received, released, dropped, passed, verdictErrors atomic.Uint64

	added *hist // how long each released packet was held (arrival to verdict)
	late  *hist // how far after its due time each packet was released
}

func newLine(s shape, seed uint64, verdict func(uint32, int) error) *line {
	return &line{
		shape:   s,
		verdict: verdict,
		rng:     rand.New(rand.NewSource(int64(seed))),
		wake:    make(chan struct{}, 1),
		added:   newHist(),
		late:    newHist(),
	}
}

// arrive takes one packet from the kernel: drop it, pass it (while draining) or hold it.
func (l *line) arrive(id uint32, now time.Time) {
	l.received.Add(1)
	if l.draining.Load() {
		l.passed.Add(1)
		l.send(id, verdictAccept)
		return
	}
	l.mu.Lock()
	if l.shape.loss > 0 && l.rng.Float64() < l.shape.loss {
		l.mu.Unlock()
		l.dropped.Add(1)
		l.send(id, verdictDrop)
		return
	}
	due := now.Add(l.shape.sample(l.rng))
	if !l.shape.reorder && due.Before(l.lastDue) {
		due = l.lastDue
	}
	l.lastDue = due
	l.seq++
	heap.Push(&l.q, held{due: due, arrived: now, id: id, seq: l.seq})
	first := l.q[0].id == id
	if len(l.q) > l.maxHeld {
		l.maxHeld = len(l.q)
	}
	l.mu.Unlock()
	if first {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

func (l *line) send(id uint32, v int) {
	if err := l.verdict(id, v); err != nil {
		l.verdictErrors.Add(1)
	}
}

// due pops every packet whose time has come, and says how long until the next one.
func (l *line) due(now time.Time) ([]held, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []held
	for len(l.q) > 0 && !l.q[0].due.After(now) {
		out = append(out, heap.Pop(&l.q).(held))
	}
	if len(l.q) == 0 {
		return out, time.Hour
	}
	return out, l.q[0].due.Sub(now)
}

// run releases packets as they fall due, until ctx ends.
func (l *line) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		ready, wait := l.due(now)
		for _, p := range ready {
			l.send(p.id, verdictAccept)
			done := time.Now()
			l.released.Add(1)
			l.added.add(done.Sub(p.arrived))
			l.late.add(done.Sub(p.due))
		}
		if len(ready) > 0 {
			continue
		}
		// Go's timers wake up to 1 ms late here (the runtime waits in whole milliseconds), so
		// the last stretch before a packet is due is slept precisely in the kernel instead.
		if wait <= precise {
			sleepExactly(wait)
			continue
		}
		timer.Reset(wait - precise)
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-timer.C:
		}
	}
}

// precise is how close to a packet's due time the line stops trusting Go's timer.
const precise = 1500 * time.Microsecond

func sleepExactly(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}

// drain lets every held packet go at once and every later one straight through: the clean end
// of a heal, so that stopping the line loses nothing.
func (l *line) drain() int {
	l.draining.Store(true)
	l.mu.Lock()
	rest := make([]held, 0, len(l.q))
	for len(l.q) > 0 {
		rest = append(rest, heap.Pop(&l.q).(held))
	}
	l.mu.Unlock()
	for _, p := range rest {
		l.passed.Add(1)
		l.send(p.id, verdictAccept)
	}
	return len(rest)
}

func (l *line) held() (now, most int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.q), l.maxHeld
}
