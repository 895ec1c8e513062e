# redcell's everyday commands. Each is one line of Go tooling, written out
# in CONTRIBUTING.md too; the README's two commands (run, test) need no make.
#
#   make test        the full suite, as CI runs it (the README's test command)
#   make test-short  the quick run while changing a file: no process started
#   make lint        go vet and staticcheck (the version CI pins)
#   make fuzz        each fuzz target for FUZZTIME (default 1m)
#   make bench       the hot path's benchmarks, with allocations
#   make callgrind   instructions per operation of the hot path's benchmarks
#                    against BASE (default: the commit before HEAD)

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 1m
BASE ?= HEAD~1

# Every fuzz target, as package:Name.
FUZZ := \
	./resp:FuzzReader ./resp:FuzzReaderBeforeAuth \
	./server:FuzzServerConn ./server:FuzzServerConnBeforeAuth ./server:FuzzCommands ./server:FuzzSequences \
	./server:FuzzParseInt ./server:FuzzParseFloat \
	./gcra:FuzzDecide ./gcra:FuzzReserve ./gcra:FuzzCommandRate \
	./window:FuzzDecide ./lease:FuzzDecisions ./storage:FuzzTable \
	./acl:FuzzRules ./acl:FuzzLoad ./acl:FuzzPatternAsGlob \
	./rdb:FuzzReader ./rdb:FuzzRoundTrip \
	./replication:FuzzApplyStream ./replication:FuzzChangeRoundTrip \
	./internal/statecodec:FuzzDecodeValue ./rls:FuzzLoad ./rls:FuzzShouldRateLimit ./rls:FuzzXDSResource

.PHONY: test test-short lint fuzz bench callgrind

test:
	go test -race -json ./... | go run ./internal/testsummary

test-short:
	go test -short ./...

lint:
	go vet ./...
	go run $(STATICCHECK) ./...

fuzz:
	@set -e; for t in $(FUZZ); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

bench:
	go test -run '^$$' -bench 'Throttle|ConnBatch' -benchmem ./server ./storage ./gcra

callgrind:
	bench/callgrind.sh ./server BenchmarkConnBatch $(BASE)
	bench/callgrind.sh ./server BenchmarkThrottleHandler $(BASE)
