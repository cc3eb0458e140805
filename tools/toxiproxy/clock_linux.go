package main

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// clock wakes Pipe after a sub-millisecond wait, which Go's own timers cannot do: an idle Go process waits in
// epoll_wait, whose timeout is whole milliseconds (runtime/netpoll_epoll.go rounds up), so a 250 µs
// time.Timer fires after about 1.1 ms (measured here, Go 1.26). A timerfd is a kernel hrtimer whose expiry
// wakes the netpoller: the wait ends some 25 µs late (measured) and holds neither a thread nor a P, as a
// nanosleep would while the proxy's other goroutines wait for one.
type clock struct {
	fd    int
	file  *os.File      // fd, non-blocking, so its reads park in the netpoller; nil without a timerfd
	fired chan struct{} // one value per arm; buffered, so relay never blocks on a wait abandoned on interrupt
}

func newClock() *clock {
	c := &clock{fired: make(chan struct{}, 1)}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err == nil {
		c.fd, c.file = fd, os.NewFile(uintptr(fd), "timerfd")
		go c.relay()
	}
	return c
}

// arm sends one value on fired after d (> 0; a zero d would disarm the timerfd).
func (c *clock) arm(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if c.file == nil || unix.TimerfdSettime(c.fd, 0, &spec, nil) != nil {
		// No timerfd (e.g. out of file descriptors): millisecond-coarse, but the data still flows.
		time.AfterFunc(d, func() { c.fired <- struct{}{} })
	}
}

// relay turns each expiry (an 8-byte count) into a value on fired, until close makes the read fail.
func (c *clock) relay() {
	buf := make([]byte, 8)
	for {
		if _, err := c.file.Read(buf); err != nil {
			return
		}
		c.fired <- struct{}{}
	}
}

func (c *clock) close() {
	if c.file != nil {
		c.file.Close()
	}
}
