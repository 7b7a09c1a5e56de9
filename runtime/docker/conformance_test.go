package docker_test

import (
	"strconv"
	"testing"

	"github.com/scion-go/scion/runtime"
	"github.com/scion-go/scion/runtime/docker"
	"github.com/scion-go/scion/runtime/runtimetest"
)

func TestConformance(t *testing.T) {
	needEngine(t)
	// A broker ID of this run's: another test run may share the engine.
	opts := docker.Options{BrokerID: testPrefix + "-rtt", Client: engine}
	runtimetest.Run(t, func(t *testing.T) runtime.Runtime {
		return newBrokerRuntime(t, opts)
	}, runtimetest.Options{
		Image:    testImage,
		BrokerID: opts.BrokerID,
		Command: func(marker string, ignoreTerm bool) []string {
			cmd := []string{agentPath, "serve", marker}
			if ignoreTerm {
				cmd = append(cmd, "-ignore-term")
			}
			return cmd
		},
		Finish:          runtimetest.FinishFIFO,
		SupportsSuspend: true,
		Restart: func(t *testing.T, old runtime.Runtime) runtime.Runtime {
			rt, err := docker.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { rt.Close() })
			return rt
		},
		ExecCommand: func(out string, code int) []string {
			return []string{agentPath, "exit", strconv.Itoa(code), out}
		},
		EchoCommand: []string{agentPath, "echo"},
	})
}
