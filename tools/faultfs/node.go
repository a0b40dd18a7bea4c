package main

// The pass-through file system: go-fuse's loopback node, with every operation that changes a
// file's data or a new file's standing routed through the tracker.

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

type node struct {
	fs.LoopbackNode
	t *tracker
}

// newRoot returns the root node of a pass-through of `source`, tracking into t.
func newRoot(source string, t *tracker) (*node, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(source, &st); err != nil {
		return nil, err
	}
	data := &fs.LoopbackRoot{Path: source, Dev: uint64(st.Dev)}
	data.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, t: t}
	}
	root := &node{LoopbackNode: fs.LoopbackNode{RootData: data}, t: t}
	data.RootNode = root
	return root, nil
}

func keyOf(in *fs.Inode) fileKey {
	a := in.StableAttr()
	return fileKey{a.Ino, a.Gen}
}

func (n *node) rel() string  { return n.Path(nil) }
func (n *node) full() string { return filepath.Join(n.RootData.Path, n.rel()) }

func (n *node) regular() bool { return n.StableAttr().Mode&syscall.S_IFMT == syscall.S_IFREG }

// locator

func (n *node) where() (string, bool) {
	var names []string
	for in := n.EmbeddedInode(); !in.IsRoot(); {
		name, parent := in.Parent()
		if parent == nil { // unlinked, or below a directory that is
			return "", false
		}
		names = append([]string{name}, names...)
		in = parent
	}
	return filepath.Join(names...), len(names) > 0
}

func (n *node) inDir(dir any) bool {
	d, ok := dir.(*node)
	if !ok {
		return false
	}
	_, parent := n.Parent()
	return parent == d.EmbeddedInode()
}

func (n *node) invalidate() { n.NotifyContent(0, 0) }

func (n *node) forget(name string) {
	if _, parent := n.Parent(); parent != nil {
		parent.NotifyEntry(name)
		parent.RmChild(name)
	}
}

// acquireByPath starts tracking the file through a descriptor opened by its path (for changes
// that come without a file handle: truncate(2)).
func (n *node) acquireByPath() (*fileState, error) {
	return n.t.acquire(keyOf(n.EmbeddedInode()), n, func() (int, error) {
		return syscall.Open(n.full(), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	})
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, _, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_TRUNC)
	if errno != 0 {
		return nil, 0, errno
	}
	f := n.wrap(fh, flags)
	if flags&syscall.O_TRUNC != 0 && n.regular() { // the kernel sends a setattr instead; in case
		if errno := n.truncate(f, 0); errno != 0 {
			f.Release(ctx)
			return nil, 0, errno
		}
	}
	return f, fuse.FOPEN_NOFLUSH, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	var before syscall.Stat_t
	existed := syscall.Lstat(filepath.Join(n.full(), name), &before) == nil
	ch, fh, _, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_TRUNC, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	child := ch.Operations().(*node)
	f := child.wrap(fh, flags)
	if existed {
		if flags&syscall.O_TRUNC != 0 {
			if errno := child.truncate(f, 0); errno != 0 {
				f.Release(ctx)
				return nil, nil, 0, errno
			}
		}
		return ch, f, fuse.FOPEN_NOFLUSH, 0
	}
	st, errno := f.state()
	if errno != 0 {
		f.Release(ctx)
		return nil, nil, 0, errno
	}
	n.t.created(st, filepath.Join(n.rel(), name))
	return ch, f, fuse.FOPEN_NOFLUSH, 0
}

// truncate changes the file's size, through f if it is one of ours, by its path otherwise.
func (n *node) truncate(f fs.FileHandle, size uint64) syscall.Errno {
	var st *fileState
	var errno syscall.Errno
	if ff, ok := f.(*file); ok {
		st, errno = ff.state()
		if errno != 0 {
			return errno
		}
	} else {
		var err error
		if st, err = n.acquireByPath(); err != nil {
			return fs.ToErrno(err)
		}
		defer n.t.release(st)
	}
	_, err := st.modify(int64(size), toEnd, func() (int, error) {
		return 0, syscall.Ftruncate(st.fd, int64(size))
	})
	return fs.ToErrno(err)
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	var inner fs.FileHandle
	if ff, ok := f.(*file); ok {
		inner = ff.lf
	}
	if size, ok := in.GetSize(); ok && n.regular() {
		if errno := n.truncate(f, size); errno != 0 {
			return errno
		}
		rest := *in
		rest.Valid &^= fuse.FATTR_SIZE
		in = &rest
	}
	return n.LoopbackNode.Setattr(ctx, inner, in, out)
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if ff, ok := f.(*file); ok {
		return ff.lf.Getattr(ctx, out)
	}
	return n.LoopbackNode.Getattr(ctx, nil, out)
}

func (n *node) Statx(ctx context.Context, f fs.FileHandle, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	if ff, ok := f.(*file); ok {
		return ff.lf.Statx(ctx, flags, mask, out)
	}
	return n.LoopbackNode.Statx(ctx, nil, flags, mask, out)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	child := n.GetChild(name)
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 && child != nil {
		n.t.unlinked(keyOf(child))
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	src := n.GetChild(name)
	var dst *fs.Inode
	if flags&fs.RENAME_EXCHANGE == 0 {
		dst = newParent.EmbeddedInode().GetChild(newName)
	}
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno != 0 {
		return errno
	}
	if dst != nil {
		n.t.unlinked(keyOf(dst))
	}
	if src != nil { // a rename is durable once done: so is the name it gave
		n.t.named(keyOf(src), filepath.Join(newParent.EmbeddedInode().Path(nil), newName))
	}
	return 0
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		n.t.named(keyOf(target.EmbeddedInode()), "")
	}
	return ch, errno
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dirHandle{inner: fh.(fs.DirStream), n: n}, fl, 0
}

// dirHandle is the loopback's directory handle, with fsync of the directory recorded.
type dirHandle struct {
	inner fs.DirStream
	n     *node
}

var (
	_ = (fs.FileReaddirenter)((*dirHandle)(nil))
	_ = (fs.FileSeekdirer)((*dirHandle)(nil))
	_ = (fs.FileReleasedirer)((*dirHandle)(nil))
	_ = (fs.FileFsyncdirer)((*dirHandle)(nil))
)

func (d *dirHandle) HasNext() bool                        { return d.inner.HasNext() }
func (d *dirHandle) Next() (fuse.DirEntry, syscall.Errno) { return d.inner.Next() }
func (d *dirHandle) Close()                               { d.inner.Close() }
func (d *dirHandle) Releasedir(ctx context.Context, f uint32) {
	d.inner.(fs.FileReleasedirer).Releasedir(ctx, f)
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.inner.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.inner.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if errno := d.inner.(fs.FileFsyncdirer).Fsyncdir(ctx, flags); errno != 0 {
		return errno
	}
	d.n.t.dirSynced(d.n)
	return 0
}
