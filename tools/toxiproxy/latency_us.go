package main

import (
	"math/rand"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// LatencyUsToxic is the stock latency toxic (toxics/latency.go) in microseconds: the stock one takes whole
// milliseconds (int64), and a same-zone cloud hop is a few tenths of one. Each chunk is released at its
// arrival + latency ± jitter, one way (a round trip needs it on both streams), and never before the
// previous chunk of the stream, so the stream keeps its order.
type LatencyUsToxic struct {
	Latency int64 `json:"latency"` // µs
	Jitter  int64 `json:"jitter"`  // µs, uniform in [-jitter, +jitter)
}

func init() {
	toxics.Register("latency_us", new(LatencyUsToxic))
}

// GetBufferSize lets chunks queue while earlier ones wait, as the stock toxic does, so latency does not cap
// the bandwidth.
func (t *LatencyUsToxic) GetBufferSize() int {
	return 1024
}

func (t *LatencyUsToxic) delay() time.Duration {
	delay := t.Latency
	if t.Jitter > 0 {
		delay += rand.Int63n(t.Jitter*2) - t.Jitter // #nosec G404 -- as the stock toxic
	}
	return time.Duration(delay) * time.Microsecond
}

func (t *LatencyUsToxic) Pipe(stub *toxics.ToxicStub) {
	clock := newClock()
	defer clock.close()
	var previousDue time.Time // per Pipe: a toxic's fields may be replaced across interrupts, locals are not
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			due := c.Timestamp.Add(t.delay()) // Timestamp: when the proxy read the chunk
			if due.Before(previousDue) {
				due = previousDue
			}
			previousDue = due
			if wait := time.Until(due); wait > 0 {
				clock.arm(wait)
				select {
				case <-clock.fired:
				case <-stub.Interrupt:
					// Being updated or removed: pass the in-flight chunk on undelayed, never drop it
					// (CREATING_TOXICS.md); chunks still buffered in Input are the link's to flush.
					stub.Output <- c
					return
				}
			}
			// As the stock toxic does (roughly): the next toxic in the chain counts from this release, so
			// two latency toxics add up.
			c.Timestamp = due
			stub.Output <- c
		}
	}
}
