package httpapi

import "testing"

func TestScrubAddresses(t *testing.T) {
	tests := []struct{ in, want string }{
		{"control channel closed: read tcp 127.0.0.1:8080->127.0.0.1:51234: read: connection reset by peer",
			"control channel closed: read tcp <address>-><address>: read: connection reset by peer"},
		{"dial tcp [::1]:9443: connect: connection refused", "dial tcp <address>: connect: connection refused"},
		{"dial tcp localhost:9443: connect: connection refused", "dial tcp <address>: connect: connection refused"},
		{"Get \"https://hub.internal.example:8443/api\": EOF", "Get \"https://<address>/api\": EOF"},
		{"Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
			"Cannot connect to the Docker daemon at <address> Is the docker daemon running?"},
		{"dial unix /run/scion/broker.sock: connect: no such file", "dial unix <address>: connect: no such file"},
		// Left alone: no address in them.
		{"runtime broker \"b1\" is offline; try again", "runtime broker \"b1\" is offline; try again"},
		{"stopped at 10:40 after 3:1 retries", "stopped at 10:40 after 3:1 retries"},
		{"agent exited with code 2: unknown flag", "agent exited with code 2: unknown flag"},
	}
	for _, tt := range tests {
		if got := ScrubAddresses(tt.in); got != tt.want {
			t.Errorf("ScrubAddresses(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
