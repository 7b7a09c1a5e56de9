// Package wire is the control-channel protocol between the Hub and a
// Runtime Broker: frames, methods, message bodies, protocol version and
// capabilities, and Conn, the multiplexed request/stream engine that runs
// over one WebSocket.
//
// Either side may send requests. Each request carries an ID, a method, an
// optional deadline and an optional idempotency key; responses and stream
// chunks refer to the request's ID. Requests are handled concurrently (never
// on the read loop), can be cancelled by the caller, and expire at their
// deadline. Frames larger than the chunk size are split into chunk frames,
// so there is no message-size cliff.
package wire
