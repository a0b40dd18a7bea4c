package main

// The control interface: a Unix socket, one JSON request per line, one JSON answer per line.
//
//	{"op":"status"}
//	{"op":"freeze","timeout_s":30}      no operation is admitted; waits for those in flight
//	{"op":"drop","new_files":"empty"}   frozen only: every file back to its last sync
//	{"op":"thaw"}                       operations held across a drop are answered EIO
//	{"op":"set_faults","faults":{...}}  see faultSpec; replaces the faults in force
//	{"op":"clear_faults"}
//	{"op":"sync"}                       every file durable as it is now (what a sync(1) would do)
//
// Every answer has "ok"; a failed request has "error" (one line) and changes nothing.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"sync"
	"time"
)

type request struct {
	Op       string     `json:"op"`
	TimeoutS float64    `json:"timeout_s,omitempty"`
	NewFiles string     `json:"new_files,omitempty"`
	Faults   *faultSpec `json:"faults,omitempty"`
}

// writeback runs the tracker's writeback of files dirty for `age`, unless the power is off (a
// freeze, and the drop that follows it, are under way): one request at a time, like the others.
func (c *controller) writeback(age time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.g.status().Frozen {
		return 0
	}
	return c.t.writeback(age, time.Now())
}

// writebackLoop runs writeback every `period` until `stop` closes.
func (c *controller) writebackLoop(age, period time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			c.writeback(age)
		}
	}
}

type controller struct {
	mu     sync.Mutex // one request at a time, whichever connection it came on
	g      *gate
	t      *tracker
	source string
	mount  string
	after  []func() // kernel notifications owed by the last drop, sent at thaw
	drops  uint64   // the gate's drop count at the last thaw
}

// handle answers one request.
func (c *controller) handle(req request) map[string]any {
	c.mu.Lock()
	out, err := c.do(req)
	c.mu.Unlock()
	if err != nil {
		return map[string]any{"ok": false, "error": err.Error()}
	}
	if out == nil {
		out = map[string]any{}
	}
	out["ok"] = true
	return out
}

func (c *controller) do(req request) (map[string]any, error) {
	switch req.Op {
	case "status":
		return c.status(), nil
	case "freeze":
		timeout := 30 * time.Second
		if req.TimeoutS > 0 {
			timeout = time.Duration(req.TimeoutS * float64(time.Second))
		}
		return nil, c.g.freeze(timeout)
	case "drop":
		return c.drop(req.NewFiles)
	case "thaw":
		return c.thaw(), nil
	case "set_faults":
		if req.Faults == nil {
			return nil, errors.New("set_faults needs faults")
		}
		f, err := newFaults(*req.Faults, c.g.now())
		if err != nil {
			return nil, err
		}
		c.g.faults.Store(f)
		return nil, nil
	case "clear_faults":
		c.g.faults.Store(nil)
		return nil, nil
	case "sync":
		if c.g.status().Frozen {
			return nil, errors.New("the power is off (frozen): thaw first")
		}
		return map[string]any{"synced": c.t.writeback(0, time.Now())}, nil
	}
	return nil, fmt.Errorf("unknown op %q: status, freeze, drop, thaw, set_faults, clear_faults, sync", req.Op)
}

func (c *controller) status() map[string]any {
	return map[string]any{"gate": c.g.status(), "files": c.t.status(), "source": c.source, "mount": c.mount}
}

func (c *controller) drop(mode string) (map[string]any, error) {
	m, err := parseNewFiles(mode)
	if err != nil {
		return nil, err
	}
	var files []droppedFile
	err = c.g.quiet(func() {
		var after []func()
		files, after = c.t.drop(m)
		c.after = append(c.after, after...)
	})
	if err != nil {
		return nil, err
	}
	var unsynced, reverted int64
	removed := 0
	for _, f := range files {
		unsynced += f.UnsyncedBytes
		reverted += f.Reverted
		if f.Removed {
			removed++
		}
	}
	if files == nil {
		files = []droppedFile{}
	}
	return map[string]any{
		"files": files, "unsynced_bytes": unsynced, "reverted_bytes": reverted, "removed": removed,
	}, nil
}

// thaw lets operations run again, then tells the kernel what the drop changed (not before: the
// kernel may wait on an operation that is held, and the notification would wait on it).
func (c *controller) thaw() map[string]any {
	before := c.g.refused.Load()
	was := c.g.thaw()
	for _, fn := range c.after {
		fn()
	}
	notified := len(c.after)
	c.after = nil
	// Give operations held across a drop a moment to be refused, so the count is complete.
	if drops := c.g.status().Drops; drops != c.drops {
		c.drops = drops
		time.Sleep(20 * time.Millisecond)
	}
	return map[string]any{"was_frozen": was, "refused": c.g.refused.Load() - before, "invalidated": notified}
}

// serve answers requests on the socket at path until the listener is closed.
func (c *controller) serve(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Printf("control: %v", err)
			}
			return
		}
		go c.conn(conn)
	}
}

func (c *controller) conn(conn net.Conn) {
	defer conn.Close()
	in := bufio.NewScanner(conn)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	enc := json.NewEncoder(conn)
	for in.Scan() {
		var req request
		var answer map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			answer = map[string]any{"ok": false, "error": "not a JSON request: " + err.Error()}
		} else {
			answer = c.handle(req)
		}
		if err := enc.Encode(answer); err != nil {
			return
		}
	}
}

// listen opens the control socket at path (a stale one is replaced), readable by root only.
func listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
