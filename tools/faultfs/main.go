// cb-faultfs mounts a directory at another as a pass-through FUSE file system that remembers
// what was not made durable (fsync/fdatasync) and can lose exactly that on command, as a power
// cut would, and that injects disk faults (latency, EIO/ENOSPC). clusterbench drives it through
// a control socket (control.go); see docs/faultfs.md.
//
//	cb-faultfs -source DIR -mount DIR -control SOCKET [-debug]
//
// It runs until SIGTERM or SIGINT (then it thaws, unmounts and exits 0) or until the file system
// is unmounted by someone else.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// fsType is the file system's subtype: `mount` shows it as fuse.cbfaultfs.
const fsType = "cbfaultfs"

type config struct {
	source, mount, control string
	debug                  bool
	cpuProfile             string
	cacheTimeout           time.Duration
	writeback              time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.source, "source", "", "the directory that holds the files")
	flag.StringVar(&cfg.mount, "mount", "", "where to mount the pass-through of -source")
	flag.StringVar(&cfg.control, "control", "", "the control socket to create")
	flag.BoolVar(&cfg.debug, "debug", false, "log every FUSE request")
	flag.DurationVar(&cfg.cacheTimeout, "cache-timeout", time.Second, "kernel entry/attribute cache time")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run here (tuning)")
	flag.DurationVar(&cfg.writeback, "writeback", 30*time.Second,
		"a file dirty this long is durable, as after the kernel's writeback (0: never, until an fsync)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("cb-faultfs: ")
	if cfg.source == "" || cfg.mount == "" || cfg.control == "" {
		fmt.Fprintln(os.Stderr, "usage: cb-faultfs -source DIR -mount DIR -control SOCKET [-debug]")
		os.Exit(2)
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			log.Fatalf("cpu profile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(cfg); err != nil {
		pprof.StopCPUProfile()
		log.Printf("error: %v", err)
		os.Exit(1)
	}
}

// mountOptions are chosen for a database's data directory on a machine of few cores: see
// docs/faultfs.md ("Speed").
func mountOptions(cfg config) *fs.Options {
	timeout := cfg.cacheTimeout
	return &fs.Options{
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		MountOptions: fuse.MountOptions{
			AllowOther:    true,                            // the server runs as mysql
			Options:       []string{"default_permissions"}, // and the kernel checks its rights
			FsName:        cfg.source,
			Name:          fsType,
			DirectMount:   true, // root mounts with mount(2): no fusermount needed
			MaxWrite:      1 << 20,
			MaxBackground: 64,
			// Without extended attributes the kernel stops asking for security.capability
			// before every write: one request per write instead of two.
			DisableXAttrs: true,
			Debug:         cfg.debug,
		},
	}
}

func run(cfg config) error {
	source, err := filepath.Abs(cfg.source)
	if err != nil {
		return err
	}
	if st, err := os.Stat(source); err != nil || !st.IsDir() {
		return fmt.Errorf("source %s is not a directory", source)
	}
	t := newTracker(source)
	root, err := newRoot(source, t)
	if err != nil {
		return err
	}
	g := newGate()
	opts := mountOptions(cfg)
	raw := &gatedFS{RawFileSystem: fs.NewNodeFS(root, opts), g: g}
	server, err := fuse.NewServer(raw, cfg.mount, &opts.MountOptions)
	if err != nil {
		return fmt.Errorf("mounting %s at %s: %w", source, cfg.mount, err)
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return fmt.Errorf("mounting %s at %s: %w", source, cfg.mount, err)
	}
	served := make(chan struct{})
	go func() { server.Wait(); close(served) }()

	ctl := &controller{g: g, t: t, source: source, mount: cfg.mount}
	l, err := listen(cfg.control)
	if err != nil {
		unmount(server, cfg.mount, served)
		return fmt.Errorf("control socket %s: %w", cfg.control, err)
	}
	go ctl.serve(l)
	stopWriteback := make(chan struct{})
	defer close(stopWriteback)
	if cfg.writeback > 0 {
		// the kernel's writeback thread wakes every 5 s (dirty_writeback_centisecs)
		go ctl.writebackLoop(cfg.writeback, min(5*time.Second, cfg.writeback), stopWriteback)
	}
	log.Printf("serving %s at %s; control socket %s; writeback after %s", source, cfg.mount, cfg.control, cfg.writeback)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case sig := <-signals:
		log.Printf("%v: thawing and unmounting", sig)
		// Whatever holds it up, the daemon is gone within a bound: its exit aborts the FUSE
		// connection, and whoever stopped it unmounts what is left.
		time.AfterFunc(shutdownLimit, func() {
			log.Printf("shutdown not done after %s; exiting", shutdownLimit)
			os.Remove(cfg.control)
			os.Exit(1)
		})
		g.faults.Store(nil)
		g.thaw() // the controller may be busy (a freeze waiting): do not wait for it
		unmount(server, cfg.mount, served)
	case <-served:
		log.Printf("%s was unmounted", cfg.mount)
	}
	closeControl(l, cfg.control)
	log.Printf("stopped")
	return nil
}

// shutdownLimit bounds the time from SIGTERM to exit (clusterbench waits 15 s before SIGKILL).
const shutdownLimit = 8 * time.Second

// unmount unmounts, lazily when files are still open, and waits a little for the server to end.
func unmount(server *fuse.Server, mount string, served <-chan struct{}) {
	start := time.Now()
	defer func() { log.Printf("unmounted %s in %s", mount, time.Since(start).Round(time.Millisecond)) }()
	if err := server.Unmount(); err != nil {
		log.Printf("unmount: %v; detaching it instead", err)
		if err := syscall.Unmount(mount, syscall.MNT_DETACH); err != nil {
			log.Printf("detach: %v", err)
		}
	}
	select {
	case <-served:
	case <-time.After(5 * time.Second):
		log.Printf("files are still open on the detached mount; exiting anyway")
	}
}

func closeControl(l net.Listener, path string) {
	l.Close()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Printf("removing %s: %v", path, err)
	}
}
