// Package system holds process-level system tests of Scion.
//
// Unlike the in-process harness (internal/testenv), these tests build the
// static bin/scion once and run real Hubs, Runtime Brokers and CLI
// invocations as separate processes on loopback, each simulated host in
// its own SCION_HOME. That is the only way to observe what a user or an
// operator sees when a process is killed with SIGKILL, frozen with
// SIGSTOP, or restarted on the same database and port.
//
// Set SCION_BIN to test a prebuilt binary. Under CI=true a test whose
// real part is missing (the binary cannot be built, a port cannot be
// bound, curl is absent) fails instead of skipping.
package system
