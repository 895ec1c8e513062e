// Command testsummary reads `go test -json` from stdin and prints what `go
// test` prints, a line per package, plus the output of every failed test,
// and then one line saying which tests were skipped and why: `go test` hides
// skips unless run with -v, and a test skipped because a tool is missing
// (redis-cli, redis-server, ...) should not pass unnoticed. It exits 1 when
// a test or a build failed, or when its input holds no test result.
//
//	go test -race -json ./... | go run ./internal/testsummary
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json's output.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	ok, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// summarize copies the summary of the events read from r to w and reports
// whether every package passed.
func summarize(r io.Reader, w io.Writer) (bool, error) {
	type key struct{ pkg, test string }
	output := map[key][]string{}
	var skipped []string
	failed, results := false, 0
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintln(w, string(line)) // not JSON: a build error, say
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			output[k] = append(output[k], e.Output)
		case "skip":
			if e.Test != "" {
				skipped = append(skipped, fmt.Sprintf("%s (%s)", e.Test, skipReason(output[k])))
			}
			delete(output, k)
		case "pass":
			if e.Test == "" {
				results++
				fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
			delete(output, k)
		case "fail":
			failed = true
			if e.Test == "" {
				results++
				for _, l := range output[k] {
					fmt.Fprint(w, l)
				}
				fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
			} else {
				for _, l := range output[k] {
					fmt.Fprint(w, l)
				}
			}
			delete(output, k)
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	if results == 0 {
		return false, fmt.Errorf("no test results in the input: run it as go test -json ./... | go run ./internal/testsummary")
	}
	sort.Strings(skipped)
	if len(skipped) == 0 {
		fmt.Fprintln(w, "skipped: none")
	} else {
		fmt.Fprintf(w, "skipped %d: %s\n", len(skipped), strings.Join(skipped, "; "))
	}
	return !failed, nil
}

// skipReason is the message a skipped test gave: its last output line
// before the "--- SKIP" line, without the file:line prefix.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, rest, ok := strings.Cut(l, ": "); ok && strings.Contains(l[:len(l)-len(rest)], ".go:") {
			return rest
		}
		return l
	}
	return "no reason given"
}
