package api

// ExecRequest is the body of POST /agents/{agent}/exec. Stdin, when set,
// is the command's whole standard input.
type ExecRequest struct {
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	TTY     bool              `json:"tty,omitempty"`
	Stdin   []byte            `json:"stdin,omitempty"`
}

// ExecOutput is one line of the exec response (application/x-ndjson):
// output on stdout or stderr, and last a line with stream "exit" and the
// exit code. An error after the stream started arrives as a line with
// stream "error" and Error set.
type ExecOutput struct {
	Stream   string `json:"stream"`
	Data     []byte `json:"data,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Error    *Error `json:"error,omitempty"`
}

// AttachControl is a text message a client sends on the attach WebSocket
// (binary messages are the agent's stdin, both ways its output).
type AttachControl struct {
	CloseWrite bool   `json:"closeWrite,omitempty"`
	Rows       uint16 `json:"rows,omitempty"`
	Cols       uint16 `json:"cols,omitempty"`
}
