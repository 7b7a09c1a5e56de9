package kube

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

var (
	sharedSpoke    *Spoke
	sharedSpokeErr error
)

// SpokeMain is Main for a package whose tests need a Spoke: it starts
// one with opts, runs the tests and stops it. Use it as TestMain's body:
//
//	func TestMain(m *testing.M) { os.Exit(kube.SpokeMain(m, kube.SpokeOptions{})) }
//
// As with Main, a Spoke that cannot start is reported by NeedSpoke in
// each test that needs it (failing under CI=true, skipping otherwise).
// The Spoke's Cluster is also what Need returns, so one TestMain serves
// both kinds of test.
func SpokeMain(m *testing.M, opts SpokeOptions) int {
	if !testingShort() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		start := time.Now()
		sharedSpoke, sharedSpokeErr = StartSpoke(ctx, opts)
		cancel()
		if sharedSpokeErr == nil {
			shared = sharedSpoke.Cluster
			fmt.Fprintf(os.Stderr, "kube fixture: spoke (kube-apiserver, kube-controller-manager %s, kwok %s) ready at %s in %v\n",
				Version, KwokVersion, sharedSpoke.URL, time.Since(start).Round(time.Millisecond))
			defer sharedSpoke.Stop()
		} else {
			sharedErr = sharedSpokeErr
		}
	} else {
		sharedSpokeErr = fmt.Errorf("kube fixture: not started with -short")
		sharedErr = sharedSpokeErr
	}
	return m.Run()
}

// NeedSpoke returns the package's Spoke, or skips t when it could not
// start (failing it under CI=true).
func NeedSpoke(t testing.TB) *Spoke {
	t.Helper()
	if testingShort() {
		t.Skip("kube fixture: skipped with -short")
	}
	if sharedSpokeErr != nil || sharedSpoke == nil {
		err := sharedSpokeErr
		if err == nil {
			err = fmt.Errorf("kube fixture: SpokeMain was not called from TestMain")
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: %v", err)
		}
		t.Skipf("no spoke fixture (set CI=true to make this fail): %v", err)
	}
	return sharedSpoke
}
