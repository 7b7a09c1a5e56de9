package kube

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// Shared is the one Cluster of a test package, started by Main.
var (
	shared    *Cluster
	sharedErr error
)

// Main starts the package's Cluster, runs the tests and stops it. Use it
// as TestMain's body:
//
//	func TestMain(m *testing.M) { os.Exit(kube.Main(m)) }
//
// A fixture that cannot start is not fatal here: Need reports it in each
// test that needs the cluster (failing under CI=true, skipping otherwise),
// so that the package's pure tests still run.
func Main(m *testing.M) int {
	if !testingShort() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		start := time.Now()
		shared, sharedErr = Start(ctx)
		cancel()
		if sharedErr == nil {
			fmt.Fprintf(os.Stderr, "kube fixture: kube-apiserver %s ready at %s in %v\n", Version, shared.URL, time.Since(start).Round(time.Millisecond))
			defer shared.Stop()
		}
	} else {
		sharedErr = fmt.Errorf("kube fixture: not started with -short")
	}
	return m.Run()
}

// testingShort reads -test.short before m.Run has parsed the flags. Under
// CI=true -short does not apply: CI must never pass without the fixture.
func testingShort() bool {
	if os.Getenv("CI") == "true" {
		return false
	}
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" || a == "--test.short" {
			return true
		}
	}
	return false
}

// Need returns the package's Cluster, or skips t when it could not start
// (failing it under CI=true, where a missing real part must not pass
// unnoticed).
func Need(t testing.TB) *Cluster {
	t.Helper()
	if testingShort() {
		t.Skip("kube fixture: skipped with -short")
	}
	if sharedErr != nil || shared == nil {
		err := sharedErr
		if err == nil {
			err = fmt.Errorf("kube fixture: Main was not called from TestMain")
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: %v", err)
		}
		t.Skipf("no kube-apiserver fixture (set CI=true to make this fail): %v", err)
	}
	return shared
}

// StartForTest starts a Cluster of t's own, stopped when t ends, for a
// package with a single Kubernetes test (where a shared cluster in
// TestMain would cost every other test its start-up). Missing binaries
// skip t, or fail it under CI=true, as in Need.
func StartForTest(t testing.TB) *Cluster {
	t.Helper()
	if testingShort() {
		t.Skip("kube fixture: skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := Start(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: %v", err)
		}
		t.Skipf("no kube-apiserver fixture (set CI=true to make this fail): %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}
