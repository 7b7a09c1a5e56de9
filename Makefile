# Scion: make build | demo | test | lint | bench
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/scion-go/scion/cli.Version=$(VERSION)
# Keep builds and test binaries within the machine's two cores.
export GOFLAGS := -buildvcs=false
PKGS    ?= ./...

.PHONY: build demo test test-short lint bench clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/scion ./cmd/scion

# The main job: a workstation Hub with a local broker and a demo agent.
demo: build
	scripts/demo.sh

# The whole suite, PostgreSQL included (.ci/postgres.sh installs and starts
# it), and the Kubernetes runtime's real kube-apiserver (.ci/kube-apiserver.sh
# installs etcd and builds the API server once; the tests start both).
test: build
	@eval "$$(.ci/postgres.sh)" && eval "$$(.ci/kube-apiserver.sh)" && SCION_BIN=$(CURDIR)/bin/scion $(GO) test -p 2 -count=1 -timeout 60m $(PKGS)

test-short:
	$(GO) test -short -count=1 $(PKGS)

# gofmt, go vet and staticcheck (pinned and cached by .ci/staticcheck.sh).
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1)
	$(GO) vet ./...
	"$$(.ci/staticcheck.sh)" ./...

bench: build
	@eval "$$(.ci/postgres.sh)" && $(GO) run ./bench/wire && SCION_BIN=$(CURDIR)/bin/scion $(GO) run ./bench/hub

clean:
	rm -rf bin
