package wire

import (
	"context"
	"math"
	"sync"
)

// The outbox serializes writes without a writer goroutine. A sender that
// finds nobody writing becomes the writer: it writes its own frame at
// once (the uncontended path costs one mutex), then the frames other
// senders queued meanwhile, batched into one message per write (frames
// joined by newlines, at most ChunkSize), which saves syscalls when many
// calls are in flight. To bound how long a caller works for others, it
// writes at most leaderBatches batches and hands the rest to a goroutine
// that lives until the queue is empty.
//
// The queue is bounded. Chunks of big messages may fill it only up to two
// chunks, while small frames may go a further smallQueueBytes beyond: so a
// small frame queued behind a big message waits for at most two chunks,
// never for the whole message. Senders over the bound wait for room.
type outbox struct {
	mu     sync.Mutex
	busy   bool      // a writer is active; while false the queue is empty
	q      []*[]byte // encoded frames, oldest first
	qBytes int
	room   chan struct{} // closed when the queue shrinks, if anyone waits
}

const (
	leaderBatches   = 1
	smallQueueBytes = 1 << 20
	maxBatchFrames  = 64
)

// enqueue hands the encoded frame *bp to the outbox, which owns it from
// then on.
func (c *Conn) enqueue(ctx context.Context, bp *[]byte, chunk bool) error {
	o := &c.out
	limit := 2 * c.opts.ChunkSize
	if !chunk {
		limit += smallQueueBytes
	}
	for {
		o.mu.Lock()
		if c.ended() {
			o.mu.Unlock()
			putBuf(bp, *bp)
			return c.unavailable()
		}
		if !o.busy {
			o.busy = true
			o.mu.Unlock()
			err := c.writeMsg(*bp)
			putBuf(bp, *bp)
			c.drain(leaderBatches)
			return err
		}
		if o.qBytes+len(*bp) <= limit {
			o.q = append(o.q, bp)
			o.qBytes += len(*bp)
			o.mu.Unlock()
			return nil
		}
		if o.room == nil {
			o.room = make(chan struct{})
		}
		room := o.room
		o.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			putBuf(bp, *bp)
			return ctx.Err()
		case <-c.done:
			putBuf(bp, *bp)
			return c.unavailable()
		}
	}
}

func (c *Conn) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// drain writes queued frames, at most budget batches, then hands over to a
// new goroutine if frames remain. Only the writer (busy) calls it.
func (c *Conn) drain(budget int) {
	o := &c.out
	var frames [maxBatchFrames]*[]byte
	for n := 0; ; n++ {
		o.mu.Lock()
		if len(o.q) == 0 || c.ended() {
			for _, bp := range o.q { // dropped: the Conn has ended
				putBuf(bp, *bp)
			}
			clear(o.q)
			o.q, o.qBytes, o.busy = o.q[:0], 0, false
			o.mu.Unlock()
			return
		}
		if n == budget {
			o.mu.Unlock()
			go c.drain(math.MaxInt)
			return
		}
		take, size := 1, len(*o.q[0])
		for take < len(o.q) && take < maxBatchFrames && size+1+len(*o.q[take]) <= c.opts.ChunkSize {
			size += 1 + len(*o.q[take])
			take++
		}
		copy(frames[:], o.q[:take])
		rest := copy(o.q, o.q[take:])
		clear(o.q[rest:])
		o.q = o.q[:rest]
		o.qBytes -= size - (take - 1)
		if o.room != nil {
			close(o.room)
			o.room = nil
		}
		o.mu.Unlock()
		c.writeBatch(frames[:take], size)
		clear(frames[:take])
	}
}

// writeBatch writes frames as one message and releases them.
func (c *Conn) writeBatch(frames []*[]byte, size int) {
	if len(frames) == 1 {
		_ = c.writeMsg(*frames[0])
		putBuf(frames[0], *frames[0])
		return
	}
	bp := getBuf()
	b := (*bp)[:0]
	if cap(b) < size {
		b = make([]byte, 0, size)
	}
	for i, fp := range frames {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, *fp...)
		putBuf(fp, *fp)
	}
	_ = c.writeMsg(b)
	putBuf(bp, b)
}
