package main

// An open file: go-fuse's loopback file for what does not change data, the tracker for what does.
// It holds the loopback file as a field, not embedded, on purpose: the loopback file offers its
// descriptor for kernel passthrough, which would send reads and writes around this layer.

import (
	"context"
	"fmt"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// fsyncDataOnly is FUSE_FSYNC_FDATASYNC: the fsync request comes from fdatasync(2).
const fsyncDataOnly = 1

type file struct {
	lf   *fs.LoopbackFile
	fd   int
	n    *node
	sync bool // opened O_SYNC or O_DSYNC: each write is durable when it returns

	mu sync.Mutex
	st *fileState // acquired at the first change through this handle, released with it
}

var (
	_ = (fs.FileReader)((*file)(nil))
	_ = (fs.FileWriter)((*file)(nil))
	_ = (fs.FileFsyncer)((*file)(nil))
	_ = (fs.FileFlusher)((*file)(nil))
	_ = (fs.FileReleaser)((*file)(nil))
	_ = (fs.FileAllocater)((*file)(nil))
	_ = (fs.FileLseeker)((*file)(nil))
	_ = (fs.FileGetattrer)((*file)(nil))
)

func (n *node) wrap(fh fs.FileHandle, flags uint32) *file {
	lf := fh.(*fs.LoopbackFile)
	fd, _ := lf.PassthroughFd() // only reads the descriptor; passthrough stays off
	return &file{lf: lf, fd: fd, n: n, sync: flags&syscall.O_DSYNC != 0}
}

// state returns the tracked state of the file, acquiring it for this handle the first time. The
// tracker reopens the file read-write through /proc: this handle may be write-only or O_DIRECT.
func (f *file) state() (*fileState, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.st != nil {
		return f.st, 0
	}
	st, err := f.n.t.acquire(keyOf(f.n.EmbeddedInode()), f.n, func() (int, error) {
		return syscall.Open(fmt.Sprintf("/proc/self/fd/%d", f.fd), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	f.st = st
	return st, 0
}

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return f.lf.Read(ctx, buf, off)
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	st, errno := f.state()
	if errno != 0 {
		return 0, errno
	}
	n, err := st.modify(off, off+int64(len(data)), func() (int, error) {
		for {
			n, err := syscall.Pwrite(f.fd, data, off)
			if err != syscall.EINTR {
				return n, err
			}
		}
	})
	if err != nil {
		return uint32(max(n, 0)), fs.ToErrno(err)
	}
	if f.sync {
		// The kernel follows such a write with an fsync of the file (FUSE's fsync carries no
		// range); this makes it durable even if that fsync never comes.
		if err := f.n.t.synced(keyOf(f.n.EmbeddedInode())); err != nil {
			return uint32(n), fs.ToErrno(err)
		}
	}
	return uint32(n), 0
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	var err error
	if flags&fsyncDataOnly != 0 {
		err = unix.Fdatasync(f.fd)
	} else {
		err = syscall.Fsync(f.fd)
	}
	if err != nil {
		return fs.ToErrno(err)
	}
	return fs.ToErrno(f.n.t.synced(keyOf(f.n.EmbeddedInode())))
}

// allocated returns the bytes a fallocate(2) of `mode` changes the data of.
func allocated(off, size uint64, mode uint32) (from, to int64) {
	switch {
	case mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0:
		return int64(off), toEnd // shifts everything after off
	case mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0:
		return int64(off), int64(off + size)
	}
	return 0, 0 // allocation only: existing bytes keep their content
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	st, errno := f.state()
	if errno != 0 {
		return errno
	}
	from, to := allocated(off, size, mode)
	_, err := st.modify(from, to, func() (int, error) {
		return 0, unix.Fallocate(f.fd, mode, int64(off), int64(size))
	})
	return fs.ToErrno(err)
}

func (f *file) Flush(ctx context.Context) syscall.Errno { return f.lf.Flush(ctx) }

func (f *file) Release(ctx context.Context) syscall.Errno {
	f.mu.Lock()
	st := f.st
	f.st = nil
	f.mu.Unlock()
	if st != nil {
		f.n.t.release(st)
	}
	return f.lf.Release(ctx)
}

func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.lf.Lseek(ctx, off, whence)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Getattr(ctx, out)
}
