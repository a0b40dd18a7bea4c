package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stubLoc is a locator for a file at a fixed path in directory dir.
type stubLoc struct {
	rel         string
	dir         string
	invalidated int
	forgotten   []string
}

func (s *stubLoc) where() (string, bool) { return s.rel, s.rel != "" }
func (s *stubLoc) inDir(dir any) bool    { return dir == s.dir }
func (s *stubLoc) invalidate()           { s.invalidated++ }
func (s *stubLoc) forget(name string)    { s.forgotten = append(s.forgotten, name) }

// fixture is a tracker over a temporary source directory.
type fixture struct {
	t    *testing.T
	root string
	tr   *tracker
	keys map[string]fileKey
}

func newFixture(t *testing.T) *fixture {
	root := t.TempDir()
	return &fixture{t: t, root: root, tr: newTracker(root), keys: map[string]fileKey{}}
}

func (f *fixture) path(rel string) string { return filepath.Join(f.root, rel) }

// put writes a file directly in the source: content that is durable before tracking starts.
func (f *fixture) put(rel string, data []byte) {
	if err := os.WriteFile(f.path(rel), data, 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) read(rel string) []byte {
	data, err := os.ReadFile(f.path(rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return data
}

// open acquires the state of rel the way a file handle does (rel must exist).
func (f *fixture) open(rel string) (*fileState, *stubLoc) {
	var s syscall.Stat_t
	if err := syscall.Stat(f.path(rel), &s); err != nil {
		f.t.Fatal(err)
	}
	key := fileKey{ino: s.Ino, gen: 1}
	f.keys[rel] = key
	loc := &stubLoc{rel: rel, dir: filepath.Dir(rel)}
	st, err := f.tr.acquire(key, loc, func() (int, error) {
		return syscall.Open(f.path(rel), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return st, loc
}

func (f *fixture) write(st *fileState, off int64, data []byte) {
	n, err := st.modify(off, off+int64(len(data)), func() (int, error) {
		return syscall.Pwrite(st.fd, data, off)
	})
	if err != nil || n != len(data) {
		f.t.Fatalf("write at %d: %d, %v", off, n, err)
	}
}

func (f *fixture) truncate(st *fileState, size int64) {
	if _, err := st.modify(size, toEnd, func() (int, error) { return 0, syscall.Ftruncate(st.fd, size) }); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) drop(mode newFiles) []droppedFile {
	out, after := f.tr.drop(mode)
	for _, fn := range after {
		fn()
	}
	return out
}

func fill(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func TestDropRevertsOverwritesAndAppends(t *testing.T) {
	f := newFixture(t)
	durable := append(fill('a', 10000), fill('b', 333)...)
	f.put("A", durable)
	st, loc := f.open("A")
	f.write(st, 5000, fill('X', 100))   // inside one page
	f.write(st, 4090, fill('Y', 20))    // across a page boundary, one page already kept
	f.write(st, 10300, fill('Z', 5000)) // over the durable end and past it
	f.write(st, 5010, fill('W', 10))    // again over a kept page
	got := f.drop(newFilesEmpty)
	if !bytes.Equal(f.read("A"), durable) {
		t.Fatalf("A not reverted: len %d", len(f.read("A")))
	}
	if len(got) != 1 || got[0].Path != "A" || got[0].SizeBefore != 15300 || got[0].SizeAfter != 10333 {
		t.Fatalf("drop report %+v", got)
	}
	if got[0].UnsyncedBytes != 5130 {
		t.Fatalf("unsynced bytes %d, want 5130", got[0].UnsyncedBytes)
	}
	// Kept: pages 0, 1 (4090-4110 and 5000-5100) and 2 (10300-10333 of the durable part).
	if got[0].Reverted != 2*pageSize+(10333-2*pageSize) {
		t.Fatalf("reverted %d bytes", got[0].Reverted)
	}
	if loc.invalidated != 1 {
		t.Fatalf("kernel cache not invalidated")
	}
	if s := f.tr.status(); s.UnsyncedFiles != 0 || s.UndoBytes != 0 {
		t.Fatalf("state left after drop: %+v", s)
	}
	f.tr.release(st)
}

func TestSyncMakesWritesDurable(t *testing.T) {
	f := newFixture(t)
	f.put("A", fill('a', 8192))
	st, _ := f.open("A")
	f.write(st, 100, fill('X', 10))
	if err := f.tr.synced(f.keys["A"]); err != nil {
		t.Fatal(err)
	}
	want := f.read("A")
	f.write(st, 200, fill('Y', 10))
	f.write(st, 8192, fill('Z', 10))
	f.drop(newFilesEmpty)
	if !bytes.Equal(f.read("A"), want) {
		t.Fatalf("the synced write was lost or the later ones kept")
	}
	f.tr.release(st)
}

func TestTruncateThenExtendReverts(t *testing.T) {
	f := newFixture(t)
	durable := fill('a', 3*pageSize+17)
	f.put("A", durable)
	st, _ := f.open("A")
	f.truncate(st, 100)
	f.truncate(st, 20000)
	f.write(st, 9000, fill('Q', 50))
	f.drop(newFilesEmpty)
	if !bytes.Equal(f.read("A"), durable) {
		t.Fatalf("truncate not reverted")
	}
	f.tr.release(st)
}

func TestPunchHoleReverts(t *testing.T) {
	f := newFixture(t)
	durable := fill('p', 4*pageSize)
	f.put("A", durable)
	st, _ := f.open("A")
	from, to := allocated(pageSize, 2*pageSize, 0x01|0x02) // KEEP_SIZE|PUNCH_HOLE
	_, err := st.modify(from, to, func() (int, error) {
		return 0, syscall.Fallocate(st.fd, 0x01|0x02, pageSize, 2*pageSize)
	})
	if err != nil {
		t.Skipf("the source file system cannot punch holes: %v", err)
	}
	if bytes.Equal(f.read("A"), durable) {
		t.Fatal("punch hole did nothing")
	}
	f.drop(newFilesEmpty)
	if !bytes.Equal(f.read("A"), durable) {
		t.Fatalf("punched hole not reverted")
	}
	f.tr.release(st)
}

func TestCreatedFilesRemoveMode(t *testing.T) {
	f := newFixture(t)
	os.Mkdir(f.path("d"), 0o755)
	for _, rel := range []string{"new", "d/dir-synced", "synced", "renamed"} {
		f.put(rel, nil)
		st, _ := f.open(rel)
		f.tr.created(st, rel)
		f.write(st, 0, fill('n', 100))
		f.tr.release(st)
	}
	f.tr.dirSynced("d")
	f.tr.named(f.keys["renamed"], "")
	if err := f.tr.synced(f.keys["synced"]); err != nil {
		t.Fatal(err)
	}
	if s := f.tr.status(); s.CreatedFiles != 3 || s.UnsyncedFiles != 3 || s.UnsyncedBytes != 300 {
		t.Fatalf("status %+v", s)
	}
	got := f.drop(newFilesRemove)
	byPath := map[string]droppedFile{}
	for _, d := range got {
		byPath[d.Path] = d
	}
	if !byPath["new"].Removed {
		t.Fatalf("a created file never named durably was not removed: %+v", got)
	}
	if _, err := os.Stat(f.path("new")); !os.IsNotExist(err) {
		t.Fatalf("new still exists")
	}
	for _, rel := range []string{"d/dir-synced", "renamed"} {
		if byPath[rel].Removed || len(f.read(rel)) != 0 {
			t.Fatalf("%s: a created file with a durable name must stay, empty: %+v", rel, byPath[rel])
		}
	}
	if len(f.read("synced")) != 100 {
		t.Fatalf("a synced new file lost data")
	}
}

func TestCreatedFileEmptyMode(t *testing.T) {
	f := newFixture(t)
	f.put("B", nil)
	st, _ := f.open("B")
	f.tr.created(st, "B")
	f.write(st, 0, fill('b', 5000))
	f.tr.release(st)
	got := f.drop(newFilesEmpty)
	if len(got) != 1 || got[0].Removed || len(f.read("B")) != 0 {
		t.Fatalf("want B empty, got %+v, %d bytes", got, len(f.read("B")))
	}
}

func TestReleaseForgetsOnlyCleanStates(t *testing.T) {
	f := newFixture(t)
	f.put("A", fill('a', 10))
	f.put("B", fill('b', 10))
	a, _ := f.open("A")
	b, _ := f.open("B")
	f.write(b, 0, fill('B', 5))
	f.tr.release(a)
	f.tr.release(b)
	if s := f.tr.status(); s.TrackedFiles != 1 {
		t.Fatalf("tracked %d files, want only the dirty one", s.TrackedFiles)
	}
	f.drop(newFilesEmpty)
	if s := f.tr.status(); s.TrackedFiles != 0 {
		t.Fatalf("tracked %d files after a drop with no handles", s.TrackedFiles)
	}
}

func TestUnlinkedFileIsForgotten(t *testing.T) {
	f := newFixture(t)
	f.put("A", fill('a', 10))
	st, _ := f.open("A")
	f.write(st, 0, fill('X', 5))
	os.Remove(f.path("A"))
	f.tr.unlinked(f.keys["A"])
	if s := f.tr.status(); s.TrackedFiles != 0 {
		t.Fatalf("unlinked file still tracked")
	}
	f.tr.release(st)
	if got := f.drop(newFilesEmpty); len(got) != 0 {
		t.Fatalf("drop touched an unlinked file: %+v", got)
	}
}

func TestConcurrentWritesAndSyncs(t *testing.T) {
	f := newFixture(t)
	durable := fill('d', 64*pageSize)
	f.put("A", durable)
	st, _ := f.open("A")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				off := int64((i*7+w*13)%64) * pageSize
				f.write(st, off+int64(w), fill(byte('A'+w), 100))
			}
		}()
	}
	wg.Wait()
	f.drop(newFilesEmpty)
	if !bytes.Equal(f.read("A"), durable) {
		t.Fatal("concurrent writes not all reverted")
	}
	f.tr.release(st)
}

func TestParseNewFiles(t *testing.T) {
	for in, want := range map[string]newFiles{"": newFilesEmpty, "empty": newFilesEmpty, "remove": newFilesRemove} {
		if got, err := parseNewFiles(in); err != nil || got != want {
			t.Fatalf("%q: %v %v", in, got, err)
		}
	}
	if _, err := parseNewFiles("gone"); err == nil {
		t.Fatal("accepted gone")
	}
}

func TestWritebackMakesOnlyFilesDirtyLongEnoughDurable(t *testing.T) {
	f := newFixture(t)
	f.put("old", fill('o', 8192))
	f.put("new", fill('n', 8192))
	f.put("made", nil)
	old, _ := f.open("old")
	f.write(old, 0, fill('X', 100))
	made, _ := f.open("made")
	f.tr.created(made, "made")
	f.write(made, 0, fill('m', 50))
	f.tr.release(made) // closed and dirty: still tracked until written back
	now := time.Now()
	newer, _ := f.open("new")
	f.write(newer, 0, fill('Y', 100))
	newer.mu.Lock()
	newer.dirtied = now.Add(10 * time.Second) // dirtied well after the others
	newer.mu.Unlock()
	if n := f.tr.writeback(30*time.Second, now.Add(20*time.Second)); n != 0 {
		t.Fatalf("nothing is 30 s old yet, %d written back", n)
	}
	if n := f.tr.writeback(30*time.Second, now.Add(31*time.Second)); n != 2 {
		t.Fatalf("want old and made written back, got %d", n)
	}
	f.drop(newFilesEmpty)
	if got := f.read("old"); !bytes.Equal(got[:100], fill('X', 100)) {
		t.Fatalf("old's written-back change was lost")
	}
	if got := f.read("made"); !bytes.Equal(got, fill('m', 50)) {
		t.Fatalf("made was emptied after its writeback: %q", got)
	}
	if got := f.read("new"); !bytes.Equal(got[:100], fill('n', 100)) {
		t.Fatalf("new's change was kept though it was not written back yet")
	}
	f.tr.release(old)
	f.tr.release(newer)
}
