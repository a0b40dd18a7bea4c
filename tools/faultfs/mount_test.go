package main

// End to end through a real FUSE mount (root and /dev/fuse only; skipped elsewhere).

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type mounted struct {
	src, mnt string
	ctl      *controller
}

func mountForTest(t *testing.T) *mounted {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	dir := t.TempDir()
	m := &mounted{src: filepath.Join(dir, "src"), mnt: filepath.Join(dir, "mnt")}
	os.Mkdir(m.src, 0o755)
	os.Mkdir(m.mnt, 0o755)
	tr := newTracker(m.src)
	root, err := newRoot(m.src, tr)
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	opts := mountOptions(config{source: m.src, cacheTimeout: time.Second})
	server, err := fuse.NewServer(&gatedFS{RawFileSystem: fs.NewNodeFS(root, opts), g: g}, m.mnt, &opts.MountOptions)
	if err != nil {
		t.Skipf("cannot mount here: %v", err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			syscall.Unmount(m.mnt, syscall.MNT_DETACH)
		}
	})
	m.ctl = &controller{g: g, t: tr, source: m.src, mount: m.mnt}
	return m
}

func (m *mounted) powerLoss(t *testing.T, mode string) map[string]any {
	if r := m.ctl.handle(request{Op: "freeze"}); r["ok"] != true {
		t.Fatalf("freeze: %v", r)
	}
	r := m.ctl.handle(request{Op: "drop", NewFiles: mode})
	if r["ok"] != true {
		t.Fatalf("drop: %v", r)
	}
	m.ctl.handle(request{Op: "thaw"})
	return r
}

func writeFile(t *testing.T, path string, flags int, off int64, data []byte, sync bool) {
	fd, err := syscall.Open(path, flags|syscall.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.Pwrite(fd, data, off); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := syscall.Fsync(fd); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMountedPowerLoss(t *testing.T) {
	m := mountForTest(t)
	a, b, c := filepath.Join(m.mnt, "A"), filepath.Join(m.mnt, "B"), filepath.Join(m.mnt, "C")
	writeFile(t, a, syscall.O_CREAT, 0, fill('a', 20000), true)
	writeFile(t, a, 0, 7000, fill('X', 3000), false)
	writeFile(t, b, syscall.O_CREAT, 0, fill('b', 5000), false)
	writeFile(t, c, syscall.O_CREAT|syscall.O_DSYNC, 0, fill('c', 100), false)
	if err := os.Truncate(a, 30000); err != nil { // a path truncate, no handle
		t.Fatal(err)
	}
	got, _ := os.ReadFile(a) // cached in the kernel: the drop must invalidate it
	if len(got) != 30000 {
		t.Fatalf("A has %d bytes before the drop", len(got))
	}
	r := m.powerLoss(t, "remove")
	if r["removed"] != 1 {
		t.Fatalf("drop %v", r)
	}
	if got, _ := os.ReadFile(a); !bytes.Equal(got, fill('a', 20000)) {
		t.Fatalf("A reads %d bytes, not its synced content", len(got))
	}
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("B survives: %v", err)
	}
	if got, _ := os.ReadFile(c); !bytes.Equal(got, fill('c', 100)) {
		t.Fatal("an O_DSYNC write was lost")
	}
}

func TestMountedHeldWriteIsRefusedAfterDrop(t *testing.T) {
	m := mountForTest(t)
	a := filepath.Join(m.mnt, "A")
	writeFile(t, a, syscall.O_CREAT, 0, fill('a', 100), true)
	fd, err := syscall.Open(a, syscall.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	m.ctl.handle(request{Op: "freeze"})
	done := make(chan error, 1)
	go func() { _, err := syscall.Pwrite(fd, []byte("late"), 0); done <- err }()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("a write completed while frozen: %v", err)
	default:
	}
	m.ctl.handle(request{Op: "drop"})
	m.ctl.handle(request{Op: "thaw"})
	if err := <-done; err != syscall.EIO {
		t.Fatalf("held write answered %v, want EIO", err)
	}
	if got, _ := os.ReadFile(a); !bytes.Equal(got, fill('a', 100)) {
		t.Fatal("the held write reached the file")
	}
}

func TestMountedRenameAndDirectories(t *testing.T) {
	m := mountForTest(t)
	d := filepath.Join(m.mnt, "d")
	if err := os.Mkdir(d, 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "tmp"), syscall.O_CREAT, 0, fill('r', 10), true)
	if err := os.Rename(filepath.Join(d, "tmp"), filepath.Join(d, "final")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d, "final"), 0, 10, fill('s', 10), false)
	m.powerLoss(t, "remove")
	if got, _ := os.ReadFile(filepath.Join(d, "final")); !bytes.Equal(got, fill('r', 10)) {
		t.Fatalf("renamed file reads %q", got)
	}
	if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("directory: %v %v", st, err)
	}
}
