package main

// What has not been made durable yet, per file: an undo log of pre-images.
//
// Every write goes through to the source file at once (so reads need no overlay and the kernel's
// page cache stays correct), but the first time a byte that was durable is about to change, the
// page holding it is read and kept in memory. A file's state is then: its size at its last sync,
// the durable content of every page changed since, and whether it was created since. fsync or
// fdatasync forgets all of that (the file is durable as it is now); a drop writes the kept pages
// back and truncates the file to its durable size, so it reads back exactly as of its last sync.
// Bytes past the durable size need no copy: the truncate removes them.

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

const pageSize = 4096

// toEnd stands for "up to the durable size" as the end of a changed range (a truncate).
const toEnd = math.MaxInt64

// newFiles says what a drop does with a file created since its last sync whose name was never
// made durable (no fsync of the file or of its directory, no rename or link of it since).
type newFiles int

const (
	newFilesEmpty  newFiles = iota // keep the name, empty the file: metadata durable, data not
	newFilesRemove                 // remove the file: its creation was not durable either
)

func parseNewFiles(s string) (newFiles, error) {
	switch s {
	case "", "empty":
		return newFilesEmpty, nil
	case "remove":
		return newFilesRemove, nil
	}
	return 0, fmt.Errorf("new_files must be empty or remove (got %q)", s)
}

// fileKey names a file for as long as it exists: its inode number and generation (a reused inode
// number has another generation).
type fileKey struct{ ino, gen uint64 }

// locator tells where a tracked file is now and talks to the kernel about it; the FUSE node
// implements it, tests use a stub.
type locator interface {
	where() (rel string, ok bool) // the file's path relative to the source root, if it has one
	inDir(dir any) bool           // is the file's parent directory `dir` (a node)?
	invalidate()                  // drop the kernel's cached pages and attributes of the file
	forget(name string)           // the file was removed by a drop: drop the kernel's entry for it
}

type fileState struct {
	key fileKey
	fd  int // a read-write descriptor of our own on the source file
	loc locator
	ino uint64 // the source file's inode number, to check a path still names this file

	// Writers hold rw shared while they save pre-images and write; a sync or a drop holds it
	// alone, so no write is half-recorded when the state is reset.
	rw sync.RWMutex

	mu        sync.Mutex // guards everything below
	synced    int64      // the size at the last sync
	pages     map[int64][]byte
	undoBytes int64
	written   int64 // bytes written since the last sync (an overwrite counts again)
	changed   bool  // written, truncated or allocated since the last sync
	created   bool  // created since the last sync
	named     bool  // the name of a created file is durable (dir fsync, rename, link)
	path      string
	refs      int
	gone      bool      // no longer in the tracker's table (unlinked, or removed by a drop)
	dirtied   time.Time // when it became dirty (first change or creation since its last sync)
}

func (st *fileState) dirty() bool { return st.changed || st.created }

// save keeps the durable content of every page in [from, to) not kept yet. Called before the
// range changes; only bytes below the durable size have durable content.
func (st *fileState) save(from, to int64) error {
	end := min(to, st.synced)
	if from < 0 || from >= end {
		return nil
	}
	last := (end - 1) / pageSize
	for i := from / pageSize; i <= last; {
		if _, ok := st.pages[i]; ok {
			i++
			continue
		}
		j := i
		for j+1 <= last {
			if _, ok := st.pages[j+1]; ok {
				break
			}
			j++
		}
		if err := st.keep(i, j); err != nil {
			return err
		}
		i = j + 1
	}
	return nil
}

// keep reads pages first..last (clipped at the durable size) in one read and keeps them.
func (st *fileState) keep(first, last int64) error {
	start := first * pageSize
	stop := min((last+1)*pageSize, st.synced)
	buf := make([]byte, stop-start)
	for done := 0; done < len(buf); {
		n, err := syscall.Pread(st.fd, buf[done:], start+int64(done))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the durable content of %s: %w", st.path, err)
		}
		if n == 0 { // shorter than its durable size: the rest reads as zeros, as in a hole
			break
		}
		done += n
	}
	if st.pages == nil {
		st.pages = make(map[int64][]byte)
	}
	for k := first; k <= last; k++ {
		lo := (k - first) * pageSize
		st.pages[k] = buf[lo:min(lo+pageSize, int64(len(buf)))]
	}
	st.undoBytes += int64(len(buf))
	return nil
}

// modify runs do, which changes bytes [from, to) of the file (to may be toEnd), after keeping
// their durable content. do returns how many bytes it wrote.
func (st *fileState) modify(from, to int64, do func() (int, error)) (int, error) {
	st.rw.RLock()
	defer st.rw.RUnlock()
	st.mu.Lock()
	err := st.save(from, to)
	st.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := do()
	st.mu.Lock()
	if !st.dirty() {
		st.dirtied = time.Now()
	}
	st.changed = true
	st.written += int64(max(n, 0))
	st.mu.Unlock()
	return n, err
}

// markSynced makes the file durable as it is now.
func (st *fileState) markSynced() error {
	st.rw.Lock()
	defer st.rw.Unlock()
	var s syscall.Stat_t
	if err := syscall.Fstat(st.fd, &s); err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.reset(s.Size)
	st.named = true
	return nil
}

// reset forgets everything since the last sync; the durable size becomes `size`. Holds mu.
func (st *fileState) reset(size int64) {
	st.synced = size
	st.pages = nil
	st.undoBytes = 0
	st.written = 0
	st.changed = false
	st.created = false
}

type tracker struct {
	root  string // the source directory
	mu    sync.Mutex
	files map[fileKey]*fileState
}

func newTracker(root string) *tracker {
	return &tracker{root: root, files: make(map[fileKey]*fileState)}
}

// acquire returns the state of the file, starting to track it (its size now is durable) with a
// descriptor from open if it is not tracked yet. Every acquire is paired with a release.
func (t *tracker) acquire(key fileKey, loc locator, open func() (int, error)) (*fileState, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if st, ok := t.files[key]; ok {
		st.refs++
		return st, nil
	}
	fd, err := open()
	if err != nil {
		return nil, err
	}
	var s syscall.Stat_t
	if err := syscall.Fstat(fd, &s); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	st := &fileState{key: key, fd: fd, loc: loc, ino: s.Ino, synced: s.Size, refs: 1}
	if loc != nil {
		st.path, _ = loc.where()
	}
	t.files[key] = st
	return st, nil
}

// release ends an acquire; a state nobody holds is forgotten once it has nothing to undo.
func (t *tracker) release(st *fileState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st.refs--
	t.forgetIfIdle(st)
}

// forgetIfIdle closes the state's descriptor when nobody holds it and it has nothing to undo.
// Holds t.mu.
func (t *tracker) forgetIfIdle(st *fileState) {
	if st.refs > 0 {
		return
	}
	st.mu.Lock()
	idle := st.gone || !st.dirty()
	st.mu.Unlock()
	if !idle {
		return
	}
	if !st.gone {
		delete(t.files, st.key)
		st.gone = true
	}
	syscall.Close(st.fd)
	st.fd = -1
}

// held returns the state of a tracked file with a reference, or nil.
func (t *tracker) held(key fileKey) *fileState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.files[key]
	if st != nil {
		st.refs++
	}
	return st
}

// synced records a successful fsync/fdatasync of the file.
func (t *tracker) synced(key fileKey) error {
	st := t.held(key)
	if st == nil {
		return nil
	}
	defer t.release(st)
	return st.markSynced()
}

// created marks a state as a file made by create(2) just now.
func (t *tracker) created(st *fileState, rel string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.dirty() {
		st.dirtied = time.Now()
	}
	st.created, st.named, st.path = true, false, rel
}

// writeback makes durable every file that has been dirty for `age` or longer, as the kernel's
// writeback does with a file's dirty pages once the oldest is older than dirty_expire_centisecs
// (30 s by default; its journal commits the file's name within a few seconds too). Returns how
// many files it wrote back. The caller makes sure no power loss is under way.
func (t *tracker) writeback(age time.Duration, now time.Time) int {
	t.mu.Lock()
	var due []*fileState
	for _, st := range t.files {
		st.mu.Lock()
		if st.dirty() && now.Sub(st.dirtied) >= age {
			st.refs++
			due = append(due, st)
		}
		st.mu.Unlock()
	}
	t.mu.Unlock()
	n := 0
	for _, st := range due {
		if st.markSynced() == nil {
			n++
		}
		t.release(st)
	}
	return n
}

// named records that the file's name was made durable by a metadata operation (rename, link).
func (t *tracker) named(key fileKey, rel string) {
	st := t.held(key)
	if st == nil {
		return
	}
	st.mu.Lock()
	st.named = true
	if rel != "" {
		st.path = rel
	}
	st.mu.Unlock()
	t.release(st)
}

// dirSynced records an fsync of directory `dir`: the names in it are durable.
func (t *tracker) dirSynced(dir any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, st := range t.files {
		if st.loc != nil && st.loc.inDir(dir) {
			st.mu.Lock()
			st.named = true
			st.mu.Unlock()
		}
	}
}

// unlinked records that a name of the file was removed; once it has no name left there is
// nothing to restore, and its state is forgotten.
func (t *tracker) unlinked(key fileKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.files[key]
	if !ok {
		return
	}
	var s syscall.Stat_t
	if err := syscall.Fstat(st.fd, &s); err != nil || s.Nlink > 0 {
		return
	}
	delete(t.files, key)
	st.gone = true
	t.forgetIfIdle(st)
}

type trackStatus struct {
	TrackedFiles  int   `json:"tracked_files"`
	UnsyncedFiles int   `json:"unsynced_files"`
	UnsyncedBytes int64 `json:"unsynced_bytes"`
	CreatedFiles  int   `json:"created_files"`
	UndoBytes     int64 `json:"undo_bytes"`
}

func (t *tracker) status() trackStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out trackStatus
	out.TrackedFiles = len(t.files)
	for _, st := range t.files {
		st.mu.Lock()
		if st.dirty() {
			out.UnsyncedFiles++
		}
		if st.created {
			out.CreatedFiles++
		}
		out.UnsyncedBytes += st.written
		out.UndoBytes += st.undoBytes
		st.mu.Unlock()
	}
	return out
}

// droppedFile is what a drop did to one file.
type droppedFile struct {
	Path          string `json:"path"`
	UnsyncedBytes int64  `json:"unsynced_bytes"` // written since its last sync
	Reverted      int64  `json:"reverted_bytes"` // durable bytes written back
	SizeBefore    int64  `json:"size_before"`
	SizeAfter     int64  `json:"size_after"`
	Removed       bool   `json:"removed,omitempty"`
	Error         string `json:"error,omitempty"`
}

// drop returns every tracked file to its durable state. The caller guarantees that no file
// operation runs meanwhile (the gate is frozen and drained). It returns what it did, sorted by
// path, and the kernel notifications to send once operations may run again.
func (t *tracker) drop(mode newFiles) ([]droppedFile, []func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []droppedFile
	var after []func()
	for _, st := range t.files {
		st.rw.Lock()
		st.mu.Lock()
		if st.dirty() {
			d, notify := t.undo(st, mode)
			out = append(out, d)
			after = append(after, notify)
		}
		st.mu.Unlock()
		st.rw.Unlock()
		t.forgetIfIdle(st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, after
}

// undo returns one file to its durable state. Holds t.mu, st.rw and st.mu.
func (t *tracker) undo(st *fileState, mode newFiles) (droppedFile, func()) {
	rel := st.path
	if st.loc != nil {
		if p, ok := st.loc.where(); ok {
			rel = p
		}
	}
	d := droppedFile{Path: rel, UnsyncedBytes: st.written, SizeAfter: st.synced}
	var s syscall.Stat_t
	if err := syscall.Fstat(st.fd, &s); err == nil {
		d.SizeBefore = s.Size
	}
	loc := st.loc
	if st.created && !st.named && mode == newFilesRemove {
		if err := t.remove(st, rel); err == nil {
			d.Removed, d.SizeAfter = true, 0
			delete(t.files, st.key)
			st.gone = true
			st.reset(0)
			name := filepath.Base(rel)
			return d, func() { notifyRemoved(loc, name) }
		} else {
			d.Error = err.Error() + "; emptied instead"
		}
	}
	var errs []error
	for idx, page := range st.pages {
		if _, err := syscall.Pwrite(st.fd, page, idx*pageSize); err != nil {
			errs = append(errs, err)
		}
		d.Reverted += int64(len(page))
	}
	if err := syscall.Ftruncate(st.fd, st.synced); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		d.Error = joinErr(d.Error, "restoring: "+err.Error())
	}
	st.reset(st.synced)
	return d, func() { notifyChanged(loc) }
}

// remove unlinks the created file at rel, if that path still names it.
func (t *tracker) remove(st *fileState, rel string) error {
	if rel == "" {
		return errors.New("its path is unknown")
	}
	full := filepath.Join(t.root, rel)
	var s syscall.Stat_t
	if err := syscall.Lstat(full, &s); err != nil {
		return err
	}
	if s.Ino != st.ino {
		return fmt.Errorf("%s names another file now", rel)
	}
	return syscall.Unlink(full)
}

func notifyChanged(loc locator) {
	if loc != nil {
		loc.invalidate()
	}
}

func notifyRemoved(loc locator, name string) {
	if loc != nil {
		loc.forget(name)
	}
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
