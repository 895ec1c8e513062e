package protocol_test

import (
	"context"
	"os"
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
// (Debian's chromium, driven by chromedp) against the built binary under
// load: what a person sees is the decisions per second moving, the hot key
// first among the most limited, a key of HTML shown as its text, the role.
// With REDCELLTEST_SCREENSHOT=1 it saves what it saw to
// docs/img/status-page.png.
func TestStatusPageInABrowser(t *testing.T) {
	browser := harness.NeedTool(t, "`apt-get install chromium`", "chromium", "chromium-browser", "google-chrome")
	srv := harness.StartBinary(t, nil, harness.OnLoopback("--metrics-addr", "127.0.0.1:0", "--flush-interval", "1h")...)
	page := strings.TrimSuffix(srv.MetricsURL, "metrics")

	// Load until the test ends: a hot key limited most, others a little,
	// and a key that is HTML.
	ctx, stopLoad := context.WithCancel(context.Background())
	var load sync.WaitGroup
	load.Go(func() {
		rdb := srv.GoRedis(t)
		for i := 0; ctx.Err() == nil; i++ {
			rdb.Do(ctx, "CL.THROTTLE", "tenant:hot", 0, 1, 3600)
			if i%10 == 0 {
				rdb.Do(ctx, "CL.THROTTLE", "tenant:"+strconv.Itoa(i%50), 0, 1, 3600)
				rdb.Do(ctx, "CL.THROTTLE", "<b>x</b>", 0, 1, 3600)
			}
		}
	})
	t.Cleanup(func() { stopLoad(); load.Wait() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1100, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	// The first answer fills the table; the second gives a rate.
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`#top tbody tr`))))
	_, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("rate").textContent !== "-"`))
	require.NoError(t, err)
	text := func(css string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(css)))
		require.NoError(t, err, css)
		return v
	}
	rate1 := text(`#rate`)
	time.Sleep(2500 * time.Millisecond) // two more answers: the rate of another second
	rate2 := text(`#rate`)
	first := text(`#top tbody tr:first-child td:first-child`)
	role := text(`#role`)
	htmlKey, err := chromedp.Run(bctx, chromedp.Evaluate[string](
		`[...document.querySelectorAll("#top tbody td")].map(td => td.textContent).find(t => t.includes("x</b>")) || ""`))
	require.NoError(t, err)
	bolds, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#top b").length`))
	require.NoError(t, err)
	require.Equal(t, "tenant:hot", first, "the hot key is listed first")
	require.Equal(t, "master", role)
	require.Equal(t, "<b>x</b>", htmlKey, "a key of HTML is shown as its text")
	require.Zero(t, bolds, "and never made into elements")
	n1, err1 := strconv.ParseFloat(strings.ReplaceAll(rate1, ",", ""), 64)
	n2, err2 := strconv.ParseFloat(strings.ReplaceAll(rate2, ",", ""), 64)
	require.NoError(t, err1, rate1)
	require.NoError(t, err2, rate2)
	require.Positive(t, n1)
	require.Positive(t, n2)
	require.NotEqual(t, rate1, rate2, "the decisions per second move")

	if os.Getenv("REDCELLTEST_SCREENSHOT") == "1" {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)) // 100: a PNG
		require.NoError(t, err)
		require.NoError(t, os.WriteFile("../docs/img/status-page.png", png, 0o644))
	}
}
