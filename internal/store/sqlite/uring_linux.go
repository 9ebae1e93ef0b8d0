package sqlite

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The audit log's syncs go through an io_uring of their own where the kernel has one: the
// sync is handed to the kernel (an IORING_OP_FSYNC with IORING_FSYNC_DATASYNC, which is
// fdatasync), and the appender waits for its completion on an eventfd in Go's network poller.
// So no thread of the process blocks in fdatasync holding a processor, which the runtime takes
// back only after a while (each sync otherwise stalls the calls queued behind it on that
// processor, and hands the processor to another thread, waking it, then puts the syncing one
// to sleep when it returns). The guarantee is fdatasync's. Where io_uring cannot be set up (an
// older kernel, io_uring_disabled, a seccomp profile that refuses it), the log calls
// fdatasync. Only the one operation is needed, and no io_uring library is served by the module
// proxy capgate is built with (iceber/iouring-go, pawelgaczynski/giouring, godzie44/go-uring,
// ii64/gouring and hodgesds/iouring-go were asked), so the ring is set up here with
// golang.org/x/sys/unix, from the kernel's ABI (include/uapi/linux/io_uring.h).

// The kernel's io_uring ABI (include/uapi/linux/io_uring.h), the parts used here.
const (
	sysIOUringSetup    = 425
	sysIOUringEnter    = 426
	sysIOUringRegister = 427

	ioringOffSQRing        = 0
	ioringOffSQEs          = 0x10000000
	ioringFeatSingleMmap   = 1 << 0
	ioringOpFsync          = 3
	ioringFsyncDatasync    = 1 << 0
	ioringRegisterEventfd  = 4
	ioringEnterGetEvents   = 1 << 0
	ioringSQESize          = 64
	ioringCQESize          = 16
	uringEntries           = 4 // one sync at a time; a few for room
	sqeOffOpcode           = 0
	sqeOffFd               = 4
	sqeOffFsyncFlags       = 28
	sqeOffUserData         = 32
	cqeOffUserData         = 0
	cqeOffRes              = 8
	ioUringParamsSize      = 120
	ioSQRingOffsetsAt      = 40 // in io_uring_params
	ioCQRingOffsetsAt      = 80
	ringOffsetsHead        = 0
	ringOffsetsTail        = 4
	ringOffsetsRingMask    = 8
	ringOffsetsRingEntries = 12
	sqRingOffsetsArray     = 24
	cqRingOffsetsCQEs      = 20
)

// errRing wraps a failure of the ring itself (submitting, waiting), not of the sync it carries:
// the caller then syncs with fdatasync instead.
var errRing = errors.New("io_uring")

// uring is one io_uring used to sync files, one sync at a time (its caller serializes them).
type uring struct {
	fd      int
	ring    []byte // the submission and completion rings, one mapping
	sqes    []byte
	efd     *os.File // the eventfd the kernel signals each completion on, read through the poller
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
	next    uint64 // the user_data of the next submission
}

// newURing sets up an io_uring for syncs; an error means the kernel offers none here.
func newURing() (*uring, error) {
	var params [ioUringParamsSize]byte
	fd, _, errno := unix.Syscall(sysIOUringSetup, uringEntries, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	u := &uring{fd: int(fd)}
	ok := false
	defer func() {
		if !ok {
			u.close()
		}
	}()
	u32 := func(off int) uint32 { return *(*uint32)(unsafe.Pointer(&params[off])) }
	sqEntries, cqEntries, features := u32(0), u32(4), u32(20)
	if features&ioringFeatSingleMmap == 0 {
		return nil, errors.New("io_uring: the kernel maps its rings apart (before 5.4)")
	}
	sq, cq := ioSQRingOffsetsAt, ioCQRingOffsetsAt
	size := max(u32(sq+sqRingOffsetsArray)+sqEntries*4, u32(cq+cqRingOffsetsCQEs)+cqEntries*ioringCQESize)
	ring, err := unix.Mmap(u.fd, ioringOffSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("io_uring: map the rings: %w", err)
	}
	u.ring = ring
	sqes, err := unix.Mmap(u.fd, ioringOffSQEs, int(sqEntries)*ioringSQESize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("io_uring: map the entries: %w", err)
	}
	u.sqes = sqes
	at := func(off uint32) unsafe.Pointer { return unsafe.Pointer(&ring[off]) }
	u.sqHead, u.sqTail = (*uint32)(at(u32(sq+ringOffsetsHead))), (*uint32)(at(u32(sq+ringOffsetsTail)))
	u.sqMask, u.sqArray = *(*uint32)(at(u32(sq + ringOffsetsRingMask))), at(u32(sq+sqRingOffsetsArray))
	u.cqHead, u.cqTail = (*uint32)(at(u32(cq+ringOffsetsHead))), (*uint32)(at(u32(cq+ringOffsetsTail)))
	u.cqMask, u.cqes = *(*uint32)(at(u32(cq + ringOffsetsRingMask))), at(u32(cq+cqRingOffsetsCQEs))
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("io_uring: eventfd: %w", err)
	}
	u.efd = os.NewFile(uintptr(efd), "audit-log-sync")
	e := int32(efd)
	if _, _, errno := unix.Syscall6(sysIOUringRegister, uintptr(u.fd), ioringRegisterEventfd, uintptr(unsafe.Pointer(&e)), 1, 0, 0); errno != 0 {
		return nil, fmt.Errorf("io_uring: register the eventfd: %w", errno)
	}
	ok = true
	return u, nil
}

// datasync makes f's data durable as fdatasync does, waiting for the kernel's completion in
// the poller. Calls must not overlap.
func (u *uring) datasync(f *os.File) error {
	fd, err := rawFd(f)
	if err != nil {
		return err
	}
	u.next++
	tail := atomic.LoadUint32(u.sqTail)
	if tail-atomic.LoadUint32(u.sqHead) > u.sqMask {
		return fmt.Errorf("%w: the submission ring is full", errRing)
	}
	idx := tail & u.sqMask
	sqe := u.sqes[idx*ioringSQESize : (idx+1)*ioringSQESize]
	clear(sqe)
	sqe[sqeOffOpcode] = ioringOpFsync
	*(*int32)(unsafe.Pointer(&sqe[sqeOffFd])) = int32(fd)
	*(*uint32)(unsafe.Pointer(&sqe[sqeOffFsyncFlags])) = ioringFsyncDatasync
	*(*uint64)(unsafe.Pointer(&sqe[sqeOffUserData])) = u.next
	*(*uint32)(unsafe.Add(u.sqArray, 4*idx)) = idx
	atomic.StoreUint32(u.sqTail, tail+1)
	for {
		_, _, errno := unix.Syscall6(sysIOUringEnter, uintptr(u.fd), 1, 0, 0, 0, 0)
		if errno == 0 {
			break
		}
		if errno != unix.EINTR && errno != unix.EAGAIN && errno != unix.EBUSY {
			return fmt.Errorf("%w: io_uring_enter: %w", errRing, errno)
		}
	}
	var buf [8]byte
	for {
		head, tail := atomic.LoadUint32(u.cqHead), atomic.LoadUint32(u.cqTail)
		for ; head != tail; head++ {
			cqe := unsafe.Add(u.cqes, ioringCQESize*(head&u.cqMask))
			data, res := *(*uint64)(unsafe.Add(cqe, cqeOffUserData)), *(*int32)(unsafe.Add(cqe, cqeOffRes))
			atomic.StoreUint32(u.cqHead, head+1)
			if data != u.next {
				continue // a completion of an earlier sync whose wait was given up
			}
			if res < 0 {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.Errno(-res)}
			}
			return nil
		}
		// Nothing completed yet: wait for the kernel's signal (a count left by a completion
		// already taken just returns at once, and the rings are read again).
		if _, err := u.efd.Read(buf[:]); err != nil {
			return fmt.Errorf("%w: wait for the sync: %w", errRing, err)
		}
	}
}

// rawFd is f's descriptor, without setting it to blocking mode as File.Fd does.
func rawFd(f *os.File) (int, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd int
	if err := sc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// close releases the ring.
func (u *uring) close() {
	if u.efd != nil {
		u.efd.Close()
	}
	if u.sqes != nil {
		unix.Munmap(u.sqes)
	}
	if u.ring != nil {
		unix.Munmap(u.ring)
	}
	unix.Close(u.fd)
}
