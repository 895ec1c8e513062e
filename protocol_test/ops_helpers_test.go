package protocol_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
)

// opsServer is the built binary run with settings from flags and the
// environment, its log read for the addresses it serves.
type opsServer struct {
	Port       int
	MetricsURL string // empty without --metrics-addr
	cmd        *exec.Cmd
	mu         sync.Mutex
	log        strings.Builder
	done       chan error
}

var (
	// "ready to accept connections" carries addr=; "serving metrics"
	// carries metrics=, in text or JSON.
	opsReadyAddr  = regexp.MustCompile(`ready to accept connections.*\baddr"?[=:]"?127\.0\.0\.1:(\d+)`)
	opsMetricsURL = regexp.MustCompile(`serving metrics.*\bmetrics"?[=:]"?(http://127\.0\.0\.1:\d+/metrics)`)
)

// startOpsBinary runs bin with args, env added to a clean environment (no
// REDCELL_ variables of the caller's), in a fresh directory, and waits until
// it accepts connections. It is stopped with SIGTERM when the test ends and
// must exit cleanly.
func startOpsBinary(t *testing.T, bin string, env []string, args ...string) *opsServer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDCELL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &opsServer{cmd: cmd, done: make(chan error, 1)}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			if m := opsMetricsURL.FindStringSubmatch(line); m != nil {
				s.MetricsURL = m[1]
			}
			if m := opsReadyAddr.FindStringSubmatch(line); m != nil && !signalled {
				s.Port, _ = strconv.Atoi(m[1])
				signalled = true
				close(ready)
			}
			s.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("redcell exited with %v; log:\n%s", err, s.Log())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("redcell did not exit within 15s of SIGTERM; log:\n%s", s.Log())
		}
	})
	select {
	case <-ready:
	case err := <-s.done:
		s.done <- err
		t.Fatalf("redcell exited before listening: %v; log:\n%s", err, s.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("redcell logged no ready line within 30s; log:\n%s", s.Log())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s
}

// Log returns what the process has written to stderr so far.
func (s *opsServer) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// metricsURLFor serves the in-process server's collector over HTTP, as
// main's --metrics-addr does, and returns the /metrics URL.
func (ts *testServer) metricsURL(t *testing.T) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(ts.Srv.Collector()))
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(hs.Close)
	return hs.URL + "/metrics"
}

// scrape is one /metrics page, parsed.
type scrape map[string]*dto.MetricFamily

// scrapeMetrics fetches url and parses it as Prometheus's text format.
func scrapeMetrics(t *testing.T, url string) scrape {
	t.Helper()
	s, err := tryScrape(url)
	require.NoError(t, err)
	return s
}

// tryScrape is scrapeMetrics for use inside require.Eventually.
func tryScrape(url string) (scrape, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	return scrape(families), err
}

// value returns the sample of family name whose labels are exactly the
// given name=value pairs, or fails the test. A histogram's value is its
// count.
func (s scrape) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.lookup(name, labels...)
	require.True(t, ok, "no sample %s%v in the scrape", name, labels)
	return v
}

func (s scrape) lookup(name string, labels ...string) (float64, bool) {
	mf := s[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		}
	}
	return 0, false
}

// freeAddr returns a 127.0.0.1 address nothing listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// needTool returns the path of the first of names on PATH (or at an
// absolute path). Without any the test is skipped with how to install it,
// unless CI is set: CI must run every test.
func needTool(t *testing.T, install string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := strings.Join(names, " or ") + " not found: this test was skipped; install it with " + install
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set, so this is a failure)")
	}
	t.Skip(msg)
	return ""
}
