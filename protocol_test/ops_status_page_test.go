package protocol_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit/harness"
)

// The status page at / on --metrics-addr, in a real headless browser
// (Debian's chromium, driven by chromedp) against the built binary serving
// the rate limit service, under load: one hot key limited among 500 others
// mostly allowed, and a key that is HTML. What a person sees: the decisions
// per second moving, allowed and limited both, the hot key first among the
// most limited, the key of HTML shown as its text, the role, and the RLS's
// rule with when it was loaded. With REDCELLTEST_SCREENSHOT=1 it saves what
// it saw to docs/img/status-page.png.
func TestStatusPageInABrowser(t *testing.T) {
	browser := harness.NeedTool(t, "`apt-get install chromium`", "chromium", "chromium-browser", "google-chrome")
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(rules, []byte("domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 10, algorithm: gcra, burst: 4}\n"), 0o600))
	srv := harness.StartBinary(t, nil, harness.OnLoopback("--metrics-addr", "127.0.0.1:0", "--flush-interval", "1h",
		"--rls-addr", "127.0.0.1:"+strconv.Itoa(harness.FreePort(t)), "--rls-config", rules)...)
	page := strings.TrimSuffix(srv.MetricsURL, "metrics")

	ctx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	load.Go(func() {
		rdb := srv.GoRedis(t)
		for i := 0; ctx.Err() == nil; i++ {
			rdb.Do(ctx, "CL.THROTTLE", "tenant:hot", 0, 1, 3600) // limited but the first time
			rdb.Do(ctx, "CL.THROTTLE", "tenant:"+strconv.Itoa(i%500), 4, 5, 1)
			if i%10 == 0 {
				rdb.Do(ctx, "CL.THROTTLE", "<b>x</b>", 0, 1, 3600)
			}
		}
	})
	t.Cleanup(func() { stopLoad(); load.Wait() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1100, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	text := func(css string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(css)))
		require.NoError(t, err, css)
		return v
	}
	number := func(css string) float64 {
		t.Helper()
		s := text(css)
		n, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		require.NoError(t, err, "%s: %q", css, s)
		return n
	}

	// The first answer fills the tables; the second gives rates; a later
	// one other rates.
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`#top tbody tr`))))
	_, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("rate").textContent !== "-"`))
	require.NoError(t, err)
	rate1 := text(`#rate`)
	_, err = chromedp.Run(bctx, chromedp.PollFunction[bool](`(was) => document.getElementById("rate").textContent !== was`,
		chromedp.WithPollingArgs(rate1), chromedp.WithPollingInterval(100*time.Millisecond)))
	require.NoError(t, err, "the decisions per second move")
	require.NotEqual(t, rate1, text(`#rate`))
	require.Positive(t, number(`#allowed-rate`))
	require.Positive(t, number(`#limited-rate`))
	shown := text(`#share`)
	require.True(t, strings.HasSuffix(shown, "%"), shown)
	share, err := strconv.ParseFloat(strings.TrimSuffix(shown, "%"), 64)
	require.NoError(t, err, shown)
	require.True(t, share > 0 && share < 100, "some allowed, some limited: %s", shown)

	require.Equal(t, "tenant:hot", text(`#top tbody tr:first-child td:first-child`), "the hot key is listed first")
	htmlKey, err := chromedp.Run(bctx, chromedp.Evaluate[string](
		`[...document.querySelectorAll("#top tbody td")].map(td => td.textContent).find(t => t.includes("x</b>")) || ""`))
	require.NoError(t, err)
	require.Equal(t, "<b>x</b>", htmlKey, "a key of HTML is shown as its text")
	bolds, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#top b").length`))
	require.NoError(t, err)
	require.Zero(t, bolds, "and never made into elements")

	require.Equal(t, "master", text(`#role`))
	require.Equal(t, "no replicas", text(`#replication`))
	require.GreaterOrEqual(t, number(`#clients`), 1.0)
	require.Regexp(t, `^1 rule in force since \d{4}-\d\d-\d\dT[\d:.]+Z \(\d+ s ago\)\.$`, text(`#rls`))
	require.Equal(t, "api.user", text(`#rules tbody tr:first-child td:first-child`))
	require.Equal(t, "10/second gcra burst 4", text(`#rules tbody tr:first-child td:nth-child(2)`))

	if os.Getenv("REDCELLTEST_SCREENSHOT") == "1" {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: a PNG
		require.NoError(t, err)
		require.NoError(t, os.WriteFile("../docs/img/status-page.png", png, 0o644))
	}
}
