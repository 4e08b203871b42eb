# jobdrop — `make help` lists the targets.

GO       ?= go
PKGS     := ./...
BIN      := bin/jobdrop
# The test suite runs on 2 cores in well under ten minutes.
TESTFLAGS ?= -race -count=1 -timeout 15m

.PHONY: help build generate verify lint test test-go fuzz bench chaos run

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/jobdrop
	$(GO) build -o $(BIN) ./cmd/jobdrop

generate: ## regenerate the templ components
	$(GO) tool templ generate

verify: ## fail when the committed generated code is stale
	@sums() { find . -name '*_templ.go' -not -path './.git/*' | sort | xargs -r sha256sum; }; \
	before=$$(sums); $(GO) tool templ generate >/dev/null 2>&1 || $(GO) tool templ generate; after=$$(sums); \
	if [ "$$before" != "$$after" ]; then echo "generated templ code was stale: run 'make generate' and commit"; exit 1; fi

lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '_templ.go$$' || true); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)

test: verify lint test-go fuzz ## verify, lint, run every test and fuzz each converter briefly

test-go:
	$(GO) test $(TESTFLAGS) $(PKGS)

# Each converter's fuzz target runs a fixed number of inputs (a few seconds
# each on 2 cores): a time limit would fail the run whenever a loaded
# machine takes longer than it to replay the corpus. FUZZTIME=30s, say,
# fuzzes each target for that long instead.
FUZZ     := FuzzCSV:10000x FuzzXLSX:300x FuzzJSON:20000x FuzzCrontab:15000x FuzzExec:15000x FuzzQuartzXML:10000x FuzzKubernetes:15000x FuzzWinTask:3000x FuzzSystemd:15000x
FUZZTIME ?=

fuzz: ## run each converter's fuzz target briefly (FUZZTIME=30s: for that long)
	@log=$$(mktemp); for t in $(FUZZ); do f=$${t%%:*}; n=$${FUZZTIME:-$${t#*:}}; \
	  echo "fuzz $$f for $$n"; \
	  $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $$n ./converters >$$log 2>&1 || { cat $$log; rm -f $$log; exit 1; }; \
	done; rm -f $$log

bench: ## run the benchmarks, then drop 1M CSV / 200k Excel rows beside kcat and print a table
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list $(PKGS) | grep -v '/bench$$')
	GO=$(GO) ./bench/run.sh

chaos: ## run the long fault suite (docs/reliability.md): kills during injection, 3 instances under kills and a zombie (with 500 two-step chains), 10,000 message schedules across a kill -9, a flood of 500 files while 5,000 tasks fire, 200 kills at random points (half an hour)
	$(GO) test -count=1 -timeout 60m -run 'Chaos|KillNine|MessageSchedulesFireOnce' -v ./cmd/jobdrop -args \
	  -kill-points=20 -kill-rows=100000 \
	  -chaos-duration=5m -chaos-tasks=5000 -chaos-kill-every=10s -chaos-chains=500
	$(GO) test -count=1 -timeout 60m -run Flood -v ./cmd/jobdrop -args \
	  -flood-files=500 -flood-rows=10000 -flood-keys=50000 -flood-tasks=5000
	$(GO) test -count=1 -timeout 90m -run Torture -v ./cmd/jobdrop -args \
	  -torture-cycles=200 -torture-duration=30m -torture-rows=20000 -torture-bulk=5000

run: ## run jobdrop on its embedded defaults: ./data, ./inbox, console :8080, broker :9092
	$(GO) run ./cmd/jobdrop run
