// Package browsertest runs headless Chromium for the browser tests of the
// buyer pages (seat picker, hosted payment pages, ticket page, demo host
// site), driven with chromedp, and keeps screenshots of each step under
// <repo>/screenshots (git-ignored) for a person to look at.
//
// Chromium is Debian's /usr/bin/chromium (`make chromium` installs it;
// .ci/run does when it is missing). The tests fail without it: a browser
// test that skips itself would hide a broken page.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Options of a browser.
type Options struct {
	// Hosts maps host names to 127.0.0.1 (Chromium's host-resolver-rules;
	// there is no other DNS here), e.g. "evil.test" for a foreign origin.
	Hosts []string
	// Width and Height are the window size (default 1280 x 900).
	Width, Height int
}

// Path returns Chromium's path: $CHROMIUM, else chromium or
// chromium-browser on PATH.
func Path() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		p, err = exec.LookPath("chromium-browser")
	}
	return p, err
}

// New starts a headless Chromium for the test and returns the context of
// its first tab; the browser stops when the test ends. Site isolation is
// off so that a test can query inside a cross-origin iframe with
// chromedp.FromNode (the iframe's document stays in the page's process).
func New(t testing.TB, opt Options) context.Context {
	t.Helper()
	path, err := Path()
	if err != nil {
		t.Fatalf("browsertest: Chromium not found (%v): run `make chromium` (apt-get install chromium)", err)
	}
	w, h := opt.Width, opt.Height
	if w == 0 {
		w, h = 1280, 900
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.WindowSize(w, h),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("disable-features", "IsolateOrigins,site-per-process"),
	)
	if len(opt.Hosts) > 0 {
		rules := make([]string, len(opt.Hosts))
		for i, h := range opt.Hosts {
			rules[i] = "MAP " + h + " 127.0.0.1"
		}
		opts = append(opts, chromedp.Flag("host-resolver-rules", strings.Join(rules, ", ")))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser (and must not race another run).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("browsertest: start Chromium: %v", err)
	}
	return ctx
}

// Tab opens another tab of the browser of ctx (a second buyer, say); it
// closes when the test ends. Tabs may be driven from their own goroutines.
func Tab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("browsertest: new tab: %v", err)
	}
	return tab
}

// Timeout bounds the actions run on the returned context (a step that
// waits for an element must not wait for ever).
func Timeout(t testing.TB, ctx context.Context, d time.Duration) context.Context {
	c, cancel := context.WithTimeout(ctx, d)
	t.Cleanup(cancel)
	return c
}

// Dir is the screenshot folder, <repo>/screenshots (the module root is
// the first parent folder with a go.mod).
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("browsertest: no go.mod above the working directory")
		}
		dir = parent
	}
	out := filepath.Join(dir, "screenshots")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Shot saves a full-page PNG of the tab as screenshots/<Test>-<name>.png
// and returns its path.
func Shot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	path, _ := shoot(t, ctx, name)
	return path
}

// Capture is Shot for a test that reads the picture: it returns the PNG
// itself. Another test run in the same checkout writes the same file
// name, so the file may by then hold that run's picture.
func Capture(t testing.TB, ctx context.Context, name string) []byte {
	t.Helper()
	_, png := shoot(t, ctx, name)
	return png
}

func shoot(t testing.TB, ctx context.Context, name string) (string, []byte) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browsertest: screenshot %s: %v", name, err)
	}
	file := unsafeName.ReplaceAllString(t.Name()+"-"+name, "_") + ".png"
	path := filepath.Join(Dir(t), file)
	// Written whole, then renamed into place: a person (or another run)
	// looking at the folder never finds half a picture.
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+file+"-*")
	if err != nil {
		t.Fatal(err)
	}
	_, werr := tmp.Write(buf)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		t.Fatal(werr)
	}
	return path, buf
}

// Phone and Desktop are the viewports the pages are looked at in.
var (
	Phone   = chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateScale(2))
	Desktop = chromedp.EmulateViewport(1280, 900)
)

// fences numbers the fence messages of this test binary.
var fences atomic.Int64

// Fence returns once every message the page in frame posted to its parent
// page before the call has been delivered there: it posts a message of its
// own from the frame to the parent and waits for it, and the messages one
// window posts to another arrive in the order posted. A test that checks
// the parent got no message (or not another one) checks after a Fence,
// not after a sleep that may be too short on a loaded machine.
func Fence(t testing.TB, ctx context.Context, frame *chromedp.Node) {
	t.Helper()
	name := fmt.Sprintf("browsertest-fence-%d", fences.Add(1))
	listen := fmt.Sprintf(`window.addEventListener('message', (e) => { if (e.data === %q) window[%q] = true; }), true`, name, name)
	post := fmt.Sprintf(`(parent.postMessage(%q, '*'), true)`, name)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](listen)); err != nil {
		t.Fatalf("browsertest: fence: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](post, chromedp.WithPollingInFrame(frame))); err != nil {
		t.Fatalf("browsertest: fence: post from the frame: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`window[%q] === true`, name), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("browsertest: fence: the parent never got the frame's message: %v", err)
	}
}
