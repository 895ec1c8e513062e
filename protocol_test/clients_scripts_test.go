package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientRun is what testdata/python/throttle.py and testdata/node/throttle.js
// print: the same calls through redis-py and ioredis.
type clientRun struct {
	Ping        any                 `json:"ping"`
	User123     []int64             `json:"user123"`
	Steps       [][]int64           `json:"steps"`
	Headers     []map[string]string `json:"headers"`
	Peek        []int64             `json:"peek"`
	Pipeline    [][]int64           `json:"pipeline"`
	Error       string              `json:"error"`
	PTTL        int64               `json:"pttl"`
	Deleted     int64               `json:"deleted"`
	AfterDelete []int64             `json:"after_delete"`
	// Transactions: the client's default MULTI/EXEC, one aborted by a
	// command refused while queued, and one whose WATCHed key changed.
	Transaction   [][]int64 `json:"transaction"`
	TxAbort       string    `json:"tx_abort"`
	TxAbortPeek   []int64   `json:"tx_abort_peek"`
	WatchConflict bool      `json:"watch_conflict"`
	WatchedPeek   []int64   `json:"watched_peek"`
}

// checkClientRun compares a client's run, made against a fresh in-process
// server whose clock stands still, with the replies each call must get.
func checkClientRun(t *testing.T, stdout []byte, ping any, errorText, txAbortText string) {
	t.Helper()
	var got clientRun
	require.NoError(t, json.Unmarshal(stdout, &got), "the script's output: %s", stdout)
	// max_burst 1, 1 per 60 s: a limit of 2, 60 s per action.
	first, second, limited := []int64{0, 2, 1, -1, 60}, []int64{0, 2, 0, -1, 120}, []int64{1, 2, 0, 60, 120}
	require.Equal(t, clientRun{
		Ping:    ping,
		User123: []int64{0, 16, 15, -1, 2},
		Steps:   [][]int64{first, second, limited},
		Headers: []map[string]string{
			{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "60"},
			{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "120"},
			{"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "120", "Retry-After": "60"},
		},
		Peek:        second,
		Pipeline:    [][]int64{first, second, limited},
		Error:       errorText,
		PTTL:        120000,
		Deleted:     1,
		AfterDelete: first,
		Transaction: [][]int64{first, second, limited},
		TxAbort:     txAbortText,
		// Nothing of the aborted transaction ran: the key is untouched.
		TxAbortPeek:   []int64{0, 2, 2, -1, 0},
		WatchConflict: true,
		// Only the other client's decision counted.
		WatchedPeek: first,
	}, got)
}
