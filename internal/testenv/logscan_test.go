package testenv

import "testing"

// The scan must be able to fail: a value that is in the logs (a broker's
// ID is logged at registration) is found; the admin token and the broker
// secrets are not.
func TestLogScanFindsWhatIsLogged(t *testing.T) {
	e := New(t, Options{Brokers: 1})
	if s := e.scan.leaked(); s != "" {
		t.Fatalf("a credential was logged: %s", s)
	}
	b := e.Brokers()[0]
	probe := &logScan{}
	probe.buf.WriteString(e.scan.buf.String())
	probe.add(b.ID)
	if probe.leaked() == "" {
		t.Fatal("the scan does not find a value that is in the logs")
	}
}
