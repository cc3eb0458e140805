//go:build !linux

package main

import "time"

// clock without a timerfd: Go's timers, which an idle process fires only to about a millisecond, so
// latency_us is coarse here (see clock_linux.go). The lab runs on Linux; this keeps the module building.
type clock struct {
	fired chan struct{} // one value per arm; buffered, so a timer never blocks on a wait abandoned on interrupt
}

func newClock() *clock {
	return &clock{fired: make(chan struct{}, 1)}
}

func (c *clock) arm(d time.Duration) {
	time.AfterFunc(d, func() { c.fired <- struct{}{} })
}

func (c *clock) close() {}
