package main

import (
	"strings"
	"testing"
)

const run = `{"Action":"start","Package":"redcell/a"}
{"Action":"run","Package":"redcell/a","Test":"TestOK"}
{"Action":"output","Package":"redcell/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"redcell/a","Test":"TestOK","Elapsed":0.01}
{"Action":"run","Package":"redcell/a","Test":"TestCLI"}
{"Action":"output","Package":"redcell/a","Test":"TestCLI","Output":"=== RUN   TestCLI\n"}
{"Action":"output","Package":"redcell/a","Test":"TestCLI","Output":"    harness_test.go:42: redis-cli not found in PATH; install it with apt-get install redis-tools\n"}
{"Action":"output","Package":"redcell/a","Test":"TestCLI","Output":"--- SKIP: TestCLI (0.00s)\n"}
{"Action":"skip","Package":"redcell/a","Test":"TestCLI","Elapsed":0}
{"Action":"pass","Package":"redcell/a","Elapsed":1.5}
`

func TestSummaryListsSkipsWithTheirReasons(t *testing.T) {
	var out strings.Builder
	ok, err := summarize(strings.NewReader(run), &out)
	if err != nil || !ok {
		t.Fatalf("summarize = %v, %v", ok, err)
	}
	want := "ok  \tredcell/a\t1.500s\nskipped 1: TestCLI (redis-cli not found in PATH; install it with apt-get install redis-tools)\n"
	if out.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", out.String(), want)
	}
}

func TestSummaryShowsFailuresAndFails(t *testing.T) {
	in := `{"Action":"run","Package":"redcell/b","Test":"TestBad"}
{"Action":"output","Package":"redcell/b","Test":"TestBad","Output":"    b_test.go:9: got 1 want 2\n"}
{"Action":"fail","Package":"redcell/b","Test":"TestBad","Elapsed":0}
{"Action":"output","Package":"redcell/b","Output":"FAIL\n"}
{"Action":"fail","Package":"redcell/b","Elapsed":0.2}
`
	var out strings.Builder
	ok, err := summarize(strings.NewReader(in), &out)
	if err != nil || ok {
		t.Fatalf("summarize = %v, %v; want a failure", ok, err)
	}
	if want := "    b_test.go:9: got 1 want 2\nFAIL\nFAIL\tredcell/b\t0.200s\nskipped: none\n"; out.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", out.String(), want)
	}
}

func TestSummaryOfNothingIsAnError(t *testing.T) {
	var out strings.Builder
	if _, err := summarize(strings.NewReader("# redcell\nbuild failed\n"), &out); err == nil {
		t.Fatal("no results: want an error")
	}
	if !strings.Contains(out.String(), "build failed") {
		t.Fatalf("the non-JSON lines are shown: %q", out.String())
	}
}
