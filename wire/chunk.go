package wire

import (
	"fmt"
)

// Chunking. A frame whose encoding is bigger than ChunkSize is sent as a
// sequence of chunk frames, each carrying a base64 slice of the encoded
// frame. Every WebSocket message is therefore at most ChunkSize bytes, which
// is what the read limit is set to: there is no size at which the
// connection dies, only MaxMessage, which fails the one message.
//
// Chunks of several messages may interleave (the write lock is released
// between chunks so small frames get through), so each chunked message has
// its own ID from the sender's chunk counter.

// chunkHeaderRoom is what a chunk frame needs besides its data: the longest
// possible header ({"k":"chunk","id":…,"of":"response","ofid":…,"tot":…,
// "off":…,"more":true,"d":""}) is about 150 bytes.
const chunkHeaderRoom = 192

// chunkPayload is how many raw bytes one chunk frame carries so that, base64
// encoded with its header, it stays within chunkSize.
func chunkPayload(chunkSize int) int { return (chunkSize - chunkHeaderRoom) / 4 * 3 }

// maxAssembling bounds chunked messages being reassembled at once. The
// sender allows itself maxChunkedOut, fewer, so a correct peer never hits it.
const (
	maxAssembling = 64
	maxChunkedOut = 32
)

// partial is a chunked message being reassembled.
type partial struct {
	of    Kind
	ofID  uint64
	total int64
	got   int64
	buf   []byte // nil while refusing: the pieces are counted, not kept
	// refused is set when total is over the limit: the rest is skipped.
	refused bool
}

// assembler reassembles chunk frames. It belongs to the read loop.
type assembler struct {
	max  int64 // MaxMessage
	open map[uint64]*partial
}

// add takes one chunk frame. It returns a message when f completes one
// (buf holds the encoded frame), or, once, on the first chunk of a message
// bigger than the limit (refused is set) so the caller can fail that request
// alone while the rest of it is skipped. An error means the peer broke the
// protocol.
//
// Memory grows only with the bytes that actually arrive, never with what a
// header claims, so a hostile Total cannot make it allocate.
func (a *assembler) add(f *Frame) (*partial, error) {
	var report *partial
	p := a.open[f.ID]
	if p == nil {
		if f.Off != 0 {
			return nil, fmt.Errorf("wire: chunk %d at offset %d of an unknown message", f.ID, f.Off)
		}
		if f.Total <= 0 || f.Of == "" || f.Of == KindChunk {
			return nil, fmt.Errorf("wire: chunk %d: bad header (total %d, of %q)", f.ID, f.Total, f.Of)
		}
		if len(a.open) >= maxAssembling {
			return nil, fmt.Errorf("wire: more than %d chunked messages at once", maxAssembling)
		}
		p = &partial{of: f.Of, ofID: f.OfID, total: f.Total, refused: f.Total > a.max}
		if a.open == nil {
			a.open = make(map[uint64]*partial)
		}
		a.open[f.ID] = p
		if p.refused {
			report = p
		}
	} else if f.Off != p.got || f.Of != p.of || f.OfID != p.ofID {
		return nil, fmt.Errorf("wire: chunk %d out of sequence (offset %d, have %d)", f.ID, f.Off, p.got)
	}
	n := int64(len(f.Data))
	if n > p.total-p.got {
		return nil, fmt.Errorf("wire: chunk %d overruns its total %d", f.ID, p.total)
	}
	p.got += n
	if !p.refused {
		p.buf = append(p.buf, f.Data...)
	}
	if f.More {
		return report, nil
	}
	delete(a.open, f.ID)
	if p.got != p.total {
		return nil, fmt.Errorf("wire: chunked message %d ended at %d of %d bytes", f.ID, p.got, p.total)
	}
	if p.refused {
		return report, nil
	}
	return p, nil
}

// decodeChunked decodes a reassembled frame and checks it is the one its
// chunks announced.
func decodeChunked(p []byte, of Kind, ofID uint64) (*Frame, error) {
	f, err := decodeFrame(p)
	if err != nil {
		return nil, err
	}
	if f.Kind != of || f.ID != ofID {
		return nil, fmt.Errorf("wire: chunked frame is %s %d, announced %s %d", f.Kind, f.ID, of, ofID)
	}
	return f, nil
}
