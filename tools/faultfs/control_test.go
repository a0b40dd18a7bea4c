package main

import (
	"bufio"
	"encoding/json"
	"net"
	"path/filepath"
	"testing"
)

// dial starts a controller on a socket in a temporary directory and returns a line-based client.
func dial(t *testing.T, c *controller) func(req string) map[string]any {
	sock := filepath.Join(t.TempDir(), "ctl")
	l, err := listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go c.serve(l)
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	in := bufio.NewReader(conn)
	return func(req string) map[string]any {
		if _, err := conn.Write([]byte(req + "\n")); err != nil {
			t.Fatal(err)
		}
		line, err := in.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(line, &out); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		return out
	}
}

func TestControlProtocol(t *testing.T) {
	f := newFixture(t)
	f.put("A", fill('a', 100))
	st, _ := f.open("A")
	f.write(st, 0, fill('X', 10))
	f.tr.release(st)
	call := dial(t, &controller{g: newGate(), t: f.tr, source: f.root, mount: "/m"})

	s := call(`{"op":"status"}`)
	files := s["files"].(map[string]any)
	if s["ok"] != true || files["unsynced_files"] != 1.0 || files["unsynced_bytes"] != 10.0 {
		t.Fatalf("status %v", s)
	}
	if r := call(`{"op":"drop"}`); r["ok"] != false || r["error"] != "not frozen: freeze first" {
		t.Fatalf("drop before freeze: %v", r)
	}
	if r := call(`{"op":"freeze","timeout_s":1}`); r["ok"] != true {
		t.Fatalf("freeze: %v", r)
	}
	if r := call(`{"op":"status"}`); r["gate"].(map[string]any)["frozen"] != true {
		t.Fatalf("not frozen: %v", r)
	}
	r := call(`{"op":"drop","new_files":"empty"}`)
	if r["ok"] != true || r["unsynced_bytes"] != 10.0 || len(r["files"].([]any)) != 1 {
		t.Fatalf("drop: %v", r)
	}
	if r := call(`{"op":"thaw"}`); r["ok"] != true || r["was_frozen"] != true || r["invalidated"] != 1.0 {
		t.Fatalf("thaw: %v", r)
	}
	if string(f.read("A")) != string(fill('a', 100)) {
		t.Fatal("A not dropped")
	}
}

func TestControlFaultsAndErrors(t *testing.T) {
	g := newGate()
	call := dial(t, &controller{g: g, t: newTracker(t.TempDir())})
	r := call(`{"op":"set_faults","faults":{"delay_ms":5,"delay_ops":["fsync"],"error":"EIO","error_ops":["fsync"],"probability":0.25}}`)
	if r["ok"] != true {
		t.Fatalf("set_faults: %v", r)
	}
	shown := call(`{"op":"status"}`)["gate"].(map[string]any)["faults"].(map[string]any)
	if shown["delay_ms"] != 5.0 || shown["error"] != "EIO" || shown["probability"] != 0.25 {
		t.Fatalf("faults shown %v", shown)
	}
	if r := call(`{"op":"set_faults","faults":{"error":"EIO"}}`); r["ok"] != false {
		t.Fatalf("accepted an error without ops: %v", r)
	}
	if g.faults.Load() == nil {
		t.Fatal("a rejected set_faults cleared the faults in force")
	}
	if r := call(`{"op":"clear_faults"}`); r["ok"] != true || g.faults.Load() != nil {
		t.Fatalf("clear_faults: %v", r)
	}
	for _, bad := range []string{`{"op":"reboot"}`, `not json`, `{"op":"set_faults"}`, `{"op":"drop","new_files":"gone"}`} {
		if r := call(bad); r["ok"] != false || r["error"] == "" {
			t.Fatalf("%s: %v", bad, r)
		}
	}
	if r := call(`{"op":"thaw"}`); r["ok"] != true || r["was_frozen"] != false {
		t.Fatalf("thaw when not frozen: %v", r)
	}
}

func TestControlSyncMakesEverythingDurableButNotWhileFrozen(t *testing.T) {
	f := newFixture(t)
	f.put("A", fill('a', 100))
	st, _ := f.open("A")
	f.write(st, 0, fill('X', 10))
	f.tr.release(st)
	call := dial(t, &controller{g: newGate(), t: f.tr, source: f.root, mount: "/m"})
	if r := call(`{"op":"freeze","timeout_s":1}`); r["ok"] != true {
		t.Fatalf("freeze: %v", r)
	}
	if r := call(`{"op":"sync"}`); r["ok"] != false || r["error"] != "the power is off (frozen): thaw first" {
		t.Fatalf("sync while frozen: %v", r)
	}
	call(`{"op":"thaw"}`)
	if r := call(`{"op":"sync"}`); r["ok"] != true || r["synced"] != 1.0 {
		t.Fatalf("sync: %v", r)
	}
	if files := call(`{"op":"status"}`)["files"].(map[string]any); files["unsynced_files"] != 0.0 {
		t.Fatalf("still unsynced after sync: %v", files)
	}
	call(`{"op":"freeze","timeout_s":1}`)
	call(`{"op":"drop"}`)
	call(`{"op":"thaw"}`)
	if got := f.read("A"); string(got[:10]) != string(fill('X', 10)) {
		t.Fatalf("the synced write was dropped: %q", got[:10])
	}
}
