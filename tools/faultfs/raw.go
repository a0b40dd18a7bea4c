package main

// gatedFS puts the gate in front of every FUSE operation that answers a caller: the node layer
// behind it (node.go) only tracks and passes through. Forget and Release are not held: nobody
// waits for them, and a killed process's files must be able to close.

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

type gatedFS struct {
	fuse.RawFileSystem
	g *gate
}

// pass runs op through the gate as an operation of kind k.
func (f *gatedFS) pass(cancel <-chan struct{}, k opKind, op func() fuse.Status) fuse.Status {
	if e := f.g.enter(cancel, k); e != 0 {
		return fuse.Status(e)
	}
	defer f.g.leave()
	if e := f.g.inject(k); e != 0 {
		return fuse.Status(e)
	}
	return op()
}

// passN is pass for operations that also return a count.
func (f *gatedFS) passN(cancel <-chan struct{}, k opKind, op func() (uint32, fuse.Status)) (uint32, fuse.Status) {
	var n uint32
	st := f.pass(cancel, k, func() fuse.Status {
		var s fuse.Status
		n, s = op()
		return s
	})
	return n, st
}

func (f *gatedFS) Read(c <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	var r fuse.ReadResult
	st := f.pass(c, opRead, func() fuse.Status {
		var s fuse.Status
		r, s = f.RawFileSystem.Read(c, in, buf)
		return s
	})
	return r, st
}

func (f *gatedFS) Write(c <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	return f.passN(c, opWrite, func() (uint32, fuse.Status) { return f.RawFileSystem.Write(c, in, data) })
}

func (f *gatedFS) Writev(c <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	return f.passN(c, opWrite, func() (uint32, fuse.Status) { return f.RawFileSystem.Writev(c, in, data) })
}

func (f *gatedFS) CopyFileRange(c <-chan struct{}, in *fuse.CopyFileRangeIn) (uint32, fuse.Status) {
	return f.passN(c, opWrite, func() (uint32, fuse.Status) { return f.RawFileSystem.CopyFileRange(c, in) })
}

func (f *gatedFS) Fallocate(c <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	return f.pass(c, opWrite, func() fuse.Status { return f.RawFileSystem.Fallocate(c, in) })
}

func (f *gatedFS) Fsync(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return f.pass(c, opFsync, func() fuse.Status { return f.RawFileSystem.Fsync(c, in) })
}

func (f *gatedFS) FsyncDir(c <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return f.pass(c, opFsync, func() fuse.Status { return f.RawFileSystem.FsyncDir(c, in) })
}

func (f *gatedFS) Lookup(c <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Lookup(c, h, name, out) })
}

func (f *gatedFS) GetAttr(c <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.GetAttr(c, in, out) })
}

func (f *gatedFS) SetAttr(c <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	k := opOther
	if in.Valid&fuse.FATTR_SIZE != 0 {
		k = opWrite // a truncate changes data
	}
	return f.pass(c, k, func() fuse.Status { return f.RawFileSystem.SetAttr(c, in, out) })
}

func (f *gatedFS) Mknod(c <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Mknod(c, in, name, out) })
}

func (f *gatedFS) Mkdir(c <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Mkdir(c, in, name, out) })
}

func (f *gatedFS) Unlink(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Unlink(c, h, name) })
}

func (f *gatedFS) Rmdir(c <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Rmdir(c, h, name) })
}

func (f *gatedFS) Rename(c <-chan struct{}, in *fuse.RenameIn, old string, new string) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Rename(c, in, old, new) })
}

func (f *gatedFS) Link(c <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Link(c, in, name, out) })
}

func (f *gatedFS) Symlink(c <-chan struct{}, h *fuse.InHeader, to, name string, out *fuse.EntryOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Symlink(c, h, to, name, out) })
}

func (f *gatedFS) Readlink(c <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	var out []byte
	st := f.pass(c, opOther, func() fuse.Status {
		var s fuse.Status
		out, s = f.RawFileSystem.Readlink(c, h)
		return s
	})
	return out, st
}

func (f *gatedFS) Access(c <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Access(c, in) })
}

func (f *gatedFS) GetXAttr(c <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	return f.passN(c, opOther, func() (uint32, fuse.Status) { return f.RawFileSystem.GetXAttr(c, h, attr, dest) })
}

func (f *gatedFS) ListXAttr(c <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	return f.passN(c, opOther, func() (uint32, fuse.Status) { return f.RawFileSystem.ListXAttr(c, h, dest) })
}

func (f *gatedFS) SetXAttr(c <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.SetXAttr(c, in, attr, data) })
}

func (f *gatedFS) RemoveXAttr(c <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.RemoveXAttr(c, h, attr) })
}

func (f *gatedFS) Create(c <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Create(c, in, name, out) })
}

func (f *gatedFS) Tmpfile(c <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	return fuse.ENOSYS // O_TMPFILE files are not tracked: the kernel answers EOPNOTSUPP from now on
}

func (f *gatedFS) Open(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Open(c, in, out) })
}

func (f *gatedFS) Lseek(c <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Lseek(c, in, out) })
}

func (f *gatedFS) Ioctl(c <-chan struct{}, in *fuse.IoctlIn, inbuf []byte, out *fuse.IoctlOut, outbuf []byte) fuse.Status {
	return fuse.Status(syscall.ENOTTY) // an ioctl could change data behind the tracking (FICLONE)
}

func (f *gatedFS) Flush(c <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Flush(c, in) })
}

func (f *gatedFS) OpenDir(c <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.OpenDir(c, in, out) })
}

func (f *gatedFS) ReadDir(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.ReadDir(c, in, out) })
}

func (f *gatedFS) ReadDirPlus(c <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.ReadDirPlus(c, in, out) })
}

func (f *gatedFS) StatFs(c <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.StatFs(c, h, out) })
}

func (f *gatedFS) Statx(c <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.Statx(c, in, out) })
}

func (f *gatedFS) GetLk(c <-chan struct{}, in *fuse.LkIn, out *fuse.LkOut) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.GetLk(c, in, out) })
}

func (f *gatedFS) SetLk(c <-chan struct{}, in *fuse.LkIn) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.SetLk(c, in) })
}

func (f *gatedFS) SetLkw(c <-chan struct{}, in *fuse.LkIn) fuse.Status {
	return f.pass(c, opOther, func() fuse.Status { return f.RawFileSystem.SetLkw(c, in) })
}
