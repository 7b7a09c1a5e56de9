// Package wire is the control-channel protocol between the Hub and a
// Runtime Broker: frames, methods, message bodies, protocol version and
// capabilities, and Conn, the multiplexed request/stream engine that runs
// over one WebSocket.
//
// Either side may send requests. Each request carries an ID, a method, an
// optional deadline and an optional idempotency key; responses and stream
// chunks refer to the request's ID. Requests are handled concurrently (reading
// goes on while any request is served), can be cancelled by the caller, and expire at their
// deadline. Frames larger than the chunk size are split into chunk frames,
// so there is no message-size cliff.
//
// # Frames
//
// Every WebSocket message is a text message holding one JSON Frame, or
// several separated by newlines when the writer batched frames that queued
// up while it was busy. Kinds: request, response, cancel, item and end
// (streams), credit (stream flow control) and chunk. A frame whose encoding
// exceeds ChunkSize travels as chunk frames, each a base64 slice of it, so
// no message exceeds ChunkSize (which is also the read limit); the receiver
// reassembles up to MaxMessage and fails just that request, with code
// request_too_large, beyond. Frames are decoded by a small single-pass
// parser (decode.go) that is fuzzed against hostile input.
//
// # IDs
//
// Each side numbers its requests from its own counter. A frame's kind says
// whose number its ID is: request and cancel frames carry the sender's
// request IDs, response, item and end frames the receiver's, credit frames
// the stream caller's. Both sides sending requests therefore never collide,
// with no coordination.
//
// # Concurrency
//
// One goroutine at a time holds the read turn and reads. When a message
// brings a request, the reader passes the turn to an idle worker (or a new
// one) and serves the request itself, so a request starts without waiting
// for a goroutine to wake, while reading goes on elsewhere; other requests
// of the same message go to workers. Workers are reused for a second, then
// gone, so an idle Conn has its reader alone (Start; Run adds the goroutine
// that waits in it).
// At most MaxConcurrent handlers run; further requests wait for a slot,
// still cancellable and subject to their deadline, up to MaxQueued, beyond
// which they are refused at once with rate_limited. Streams, being
// long-lived, have their own bound (MaxStreams) and are refused rather
// than queued. Writes go through an outbox that serializes them without a
// writer goroutine and lets small frames overtake the chunks of a big
// message.
//
// A round trip therefore costs one goroutine hand-off beyond what a bare
// WebSocket echo does: our read loop to the waiting caller (the wake-up of
// the peer's next reader happens while the request is served). A wake-up
// can cost an idle OS thread's start, the dominant cost of a round trip on
// small virtual machines, so nothing else on the hot path wakes one: no
// timer is armed per call (calls without a deadline share a per-Conn
// sweeper; a handler's ctx, the request itself, arms its deadline timer
// only if the handler asks for Done; idle workers check their age rather
// than reset a timer), deliveries happen outside the Conn's lock, and
// writes are made by the goroutine that has the frame.
//
// # Streams
//
// Streams use credit-based flow control: the caller announces a window of
// StreamWindow items, the handler's send blocks when it has used its
// credit, and the caller grants more as Recv consumes. A slow consumer
// holds at most a window of items and stalls only its own handler.
//
// # Liveness
//
// Each side pings every HeartbeatInterval; a Conn that hears nothing (no
// frame, no pong) for HeartbeatInterval+Grace closes itself, which fails
// every pending call with runtime_broker_unavailable.
//
// Sign, SignHeaders and VerifySignature authenticate a broker's HTTP
// requests (including the WebSocket upgrade) with an HMAC over method,
// path, query string and body hash; the verifier records each nonce once
// (the Hub in its database, test servers in memory) against replay.
package wire
