package main

import (
	"math"
	"sync"
	"time"
)

// hist counts durations in fixed 20 µs buckets up to 10 s (the last bucket takes everything
// above). Quantiles are read back as the upper edge of their bucket, so they are at most 20 µs
// high; the maximum and the mean are kept exactly.
type hist struct {
	mu      sync.Mutex
	buckets []uint64
	n       uint64
	sumUs   float64
	maxUs   float64
}

const bucketUs = 20

func newHist() *hist {
	return &hist{buckets: make([]uint64, 10_000_000/bucketUs+1)}
}

func (h *hist) add(d time.Duration) {
	us := float64(d) / float64(time.Microsecond)
	if us < 0 {
		us = 0
	}
	i := int(us / bucketUs)
	if i >= len(h.buckets) {
		i = len(h.buckets) - 1
	}
	h.mu.Lock()
	h.buckets[i]++
	h.n++
	h.sumUs += us
	if us > h.maxUs {
		h.maxUs = us
	}
	h.mu.Unlock()
}

// summary is what the status file shows of a histogram, in microseconds.
type summary struct {
	N    uint64  `json:"n"`
	Mean float64 `json:"mean"`
	P5   float64 `json:"p5"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

func (h *hist) summary() summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := summary{N: h.n, Max: round1(h.maxUs)}
	if h.n == 0 {
		return s
	}
	s.Mean = round1(h.sumUs / float64(h.n))
	s.P5 = h.quantile(0.05)
	s.P50 = h.quantile(0.50)
	s.P95 = h.quantile(0.95)
	s.P99 = h.quantile(0.99)
	return s
}

// quantile: the caller holds the lock and n > 0.
func (h *hist) quantile(q float64) float64 {
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.buckets {
		seen += c
		if seen >= rank {
			return math.Min(float64((i+1)*bucketUs), round1(h.maxUs))
		}
	}
	return round1(h.maxUs)
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
