# Scion: make build | demo | test | lint | bench
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/scion-go/scion/cli.Version=$(VERSION)
# Keep builds and test binaries within the machine's two cores.
export GOFLAGS := -buildvcs=false
PKGS    ?= ./...

.PHONY: build demo test test-short lint deadcode bench clean

# The first build downloads the modules and compiles everything, a few
# minutes on two cores: say so, rather than sit silent.
build:
	@[ -x bin/scion ] || echo "==> building bin/scion (the first build downloads modules and compiles for a few minutes; later ones take seconds)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/scion ./cmd/scion

# The main job: a workstation Hub with a local broker and a demo agent.
demo: build
	scripts/demo.sh

# The whole suite, PostgreSQL included (.ci/postgres.sh installs and starts
# it), and the Kubernetes runtime's real kube-apiserver (.ci/kube-apiserver.sh
# installs etcd and builds the API server once; the tests start both).
# -trimpath keeps the checkout's directory out of what go test compiles,
# so that a clean clone on a warm machine reuses the build cache: without
# it every package was compiled again for a new path (131 s of a CI run
# here, against 33 s of linking with it).
#
# With the whole suite, the tests that measure the Hub's latency under
# attack (QUIET_TESTS) run first, alone: beside other packages' tests
# (their loopback traffic, PostgreSQL's fsyncs, Docker's network
# namespaces) a signed-in client's p99 went past the 100 ms they assert,
# whatever the Hub's priority. Then test/system, whose long pole is ten
# kill -9 trials of 100 Docker starts (about 370 s, bound by the Docker
# Engine: its fuse-overlayfs storage), runs in a go test of its own, and
# every other package beside it at nice 10: those have slack while the
# trials run, and the Engine and the system tests' Hubs and brokers get
# the cores first (a CI run that shared them evenly took test/system from
# 381 s alone to 548 s). Its output is printed when it ends. It runs in a
# process group of its own (setsid), which an interrupted or failed
# target kills, so no test binary or Docker work outlives it. Every step
# runs; any failing fails the target.
test: build
	@eval "$$(.ci/postgres.sh)" && eval "$$(.ci/kube-apiserver.sh)" && export SCION_BIN=$(CURDIR)/bin/scion && \
	if [ "$(TEST_PKGS)" = "$(ALL_PKGS)" ]; then \
		rc=0; sys=$$(mktemp); syspid=; \
		trap '[ -z "$$syspid" ] || kill -TERM -$$syspid 2>/dev/null; rm -f "$$sys" "$$sys.rc"' EXIT; trap 'exit 130' INT TERM; \
		$(GO) test -trimpath -count=1 -timeout 30m -run '$(QUIET_TESTS)' ./test/system/ || rc=$$?; \
		setsid -w sh -c '$(GO) test -trimpath -count=1 -timeout 60m $(SYSTEM_TESTFLAGS) -skip "$(QUIET_TESTS)" ./test/system/ >"$$1" 2>&1; echo $$? >"$$1.rc"' sh "$$sys" & syspid=$$!; \
		nice -n 10 $(GO) test -trimpath -p 2 -count=1 -timeout 60m $$($(GO) list ./... | grep -v '/test/system$$') || rc=$$?; \
		wait $$syspid; cat "$$sys"; [ "$$(cat "$$sys.rc" 2>/dev/null)" = 0 ] || rc=1; \
		exit $$rc; \
	else \
		$(GO) test -trimpath -p 2 -count=1 -timeout 60m $(TEST_PKGS); \
	fi

# SYSTEM_TESTFLAGS adds go test flags to test/system's main run (-v to
# see each test's duration: SYSTEM_TESTFLAGS=-v bash .ci/run).
SYSTEM_TESTFLAGS ?=

QUIET_TESTS = ^(TestHubUnderHostileConnections|TestSlowUploadsLockNobodyOut)$$
ALL_PKGS = ./test/system/ ./...

# TEST_PKGS is what PKGS names, test/system first when it is the whole
# module (see above).
TEST_PKGS = $(if $(filter ./...,$(PKGS)),$(ALL_PKGS),$(PKGS))

test-short:
	$(GO) test -short -count=1 $(PKGS)

# gofmt, go vet, staticcheck and deadcode (each pinned and cached by its
# .ci/*.sh).
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1)
	$(GO) vet ./...
	"$$(.ci/staticcheck.sh)" ./...
	@$(MAKE) --no-print-directory deadcode

deadcode:
	@out=$$("$$(.ci/deadcode.sh)" -filter "$$($(GO) list ./... | grep -Ev '$(DEADCODE_SKIP)' | sed 's/[.]/\\./g' | paste -sd'|' | sed 's/.*/^(&)$$/')" \
		-f '{{range .Funcs}}{{printf "%s.%s %s\n" $$.Path .Name .Position}}{{end}}' $(DEADCODE_ROOTS)) || exit 1; \
	out=$$(printf '%s\n' "$$out" | sed '/^$$/d; s|^$(MODULE)/||' | awk -v allow=.ci/deadcode.allow \
		'BEGIN { while ((getline l < allow) > 0) if (l !~ /^#/ && split(l, f) > 0) ok[f[1]] = 1 } \
		$$1 in ok { seen[$$1] = 1; next } { print "unreachable func: " $$0 } \
		END { for (k in ok) if (!(k in seen)) print k ": listed in .ci/deadcode.allow but reachable (or gone): drop the line" }'); \
	if [ -n "$$out" ]; then printf '%s\n' "$$out"; echo 'deadcode: move test-only code into tests, delete it, or wire it'; exit 1; fi

# deadcode reports the functions the repo's programs cannot reach. It
# reports product packages only: the harnesses (DEADCODE_SKIP) are for
# tests, and so is code only they reach. client is skipped too: it is the
# typed client programs of other modules import (internal/deptest), so
# its exported API is for them, whether or not a program of ours calls
# it; staticcheck (U1000) still reports what nothing in it uses.
MODULE         = github.com/scion-go/scion
DEADCODE_ROOTS = ./cmd/scion ./bench/... ./runtime/docker/internal/testagent
DEADCODE_SKIP  = ^$(MODULE)/(internal/testenv(/.*)?|internal/deptest|store/storetest|runtime/runtimetest|client)$$

bench: build
	@eval "$$(.ci/postgres.sh)" && $(GO) run ./bench/wire && SCION_BIN=$(CURDIR)/bin/scion $(GO) run ./bench/hub

clean:
	rm -rf bin
