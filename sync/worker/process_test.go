package worker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	json "github.com/goccy/go-json"
	"github.com/redis/rueidis"

	"github.com/ticketd/ticketd/inventory/keys"
	"github.com/ticketd/ticketd/inventory/orders"
	"github.com/ticketd/ticketd/inventory/redistest"
	"github.com/ticketd/ticketd/sync/pgtest"
)

// buildTicketd builds cmd/ticketd into a temporary directory, or skips the
// test when that is impossible here.
func buildTicketd(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("cannot build ticketd: no go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "ticketd")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/ticketd/ticketd/cmd/ticketd").CombinedOutput()
	if err != nil {
		t.Skipf("cannot build ticketd (go build failed): %v\n%s", err, out)
	}
	return bin
}

// queuePaid queues n paid orders of 2 tickets, the first heavy on one event
// (one stream, several rounds: a flash sale) and the rest spread over 16,
// with the record and tickets in the entry (rec without its tickets, which
// travel as tix), as order_confirm.lua queued them before the record stayed
// in the order hash.
func queuePaid(t *testing.T, rc rueidis.Client, space keys.Space, n, heavy int, prefix string) []orders.Record {
	t.Helper()
	recs := make([]orders.Record, n)
	cmds := make(rueidis.Commands, n)
	for i := range n {
		ev := prefix + "flash"
		if i >= heavy {
			ev = prefix + strconv.Itoa(i%16)
		}
		rec := record(ev, 2)
		recs[i] = rec
		tix, err := json.Marshal(rec.Tickets)
		if err != nil {
			t.Fatal(err)
		}
		stored := rec
		stored.Tickets = nil
		js, err := json.Marshal(stored)
		if err != nil {
			t.Fatal(err)
		}
		cmds[i] = rc.B().Xadd().Key(space.Paid(keys.Partition(ev))).Id("*").FieldValue().
			FieldValue(orders.StreamOrderID, rec.OrderID).FieldValue(orders.StreamRecord, string(js)).
			FieldValue(orders.StreamTickets, string(tix)).FieldValue(orders.StreamRef, "ref-"+strconv.Itoa(i)).
			FieldValue(orders.StreamPaidAt, strconv.FormatInt(time.Now().UnixMilli(), 10)).Build()
	}
	for _, r := range rc.DoMulti(context.Background(), cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// child is a ticketd process in worker mode.
type child struct {
	cmd  *exec.Cmd
	logs *logBuffer
	done chan error
}

func startWorker(t *testing.T, bin string, env []string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, "-mode", "worker"), logs: &logBuffer{}, done: make(chan error, 1)}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start ticketd: %v", err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

func (c *child) consumer(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "worker"
	}
	return host + "-" + strconv.Itoa(c.cmd.Process.Pid)
}

func (c *child) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("ticketd did not exit; its log:\n%s", c.logs.String())
		return nil
	}
}

// A ticketd worker process killed with SIGKILL in the middle of a flash
// sale's backlog is replaced by another process: within seconds (well
// under the 30 s ClaimIdle) Postgres holds every order exactly once, the
// log says what was taken over, and the dead consumer is gone.
func TestKilledWorkerProcessIsReplacedWithinSeconds(t *testing.T) {
	t.Parallel()
	bin := buildTicketd(t)
	rc, space := redistest.New(t)
	pool := pgtest.New(t)
	dbURL := pgtest.URLOf(t, pool)
	ctx := context.Background()
	b := &bundle{rc: rc, space: space, pool: pool}
	env := []string{"REDIS_URL=" + redistest.URL(), "DATABASE_URL=" + dbURL, "TICKETD_KEY_PREFIX=" + space.Prefix,
		"TICKETD_LOG_FORMAT=json", "TICKETD_MAIL=off", "TICKETD_ENV=development"} // the worker's mailer is not under test

	// Kill a worker while it holds entries it has read and Postgres holds
	// some orders but not all. A kill can land just between two rounds;
	// then another worker gets more to do and is killed in turn.
	var recs []orders.Record
	var dead string
	var held int64
	for attempt := 1; dead == ""; attempt++ {
		if attempt > 3 {
			t.Fatal("three kills in a row landed between rounds")
		}
		recs = append(recs, queuePaid(t, rc, space, 3000, 2400, "ev_proc"+strconv.Itoa(attempt)+"_")...)
		c := startWorker(t, bin, env)
		name := c.consumer(t)
		waitWithin(t, 20*time.Second, "the worker to write part of the backlog", func() bool {
			n := b.count(t, `SELECT count(*) FROM orders`)
			return n > 0 && n < len(recs) && pendingWith(t, rc, space, name) > 0
		})
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = c.wait(t)
		if held = pendingWith(t, rc, space, name); held > 0 {
			dead = name
		}
	}
	if n := b.count(t, `SELECT count(*) FROM orders`); n >= len(recs) {
		t.Fatalf("Postgres has all %d orders before the second worker started", n)
	}

	start := time.Now()
	c := startWorker(t, bin, env)
	waitWithin(t, 20*time.Second, "every order in Postgres and the dead consumer removed", func() bool {
		length, pending := b.streams(t)
		return length == 0 && pending == 0 && b.count(t, `SELECT count(*) FROM orders`) == len(recs) &&
			len(consumerParts(t, rc, space, dead)) == 0
	})
	t.Logf("killed %s holding %d entries; the next worker wrote the rest %v after its start", dead, held, time.Since(start).Round(time.Millisecond))
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.wait(t); err != nil {
		t.Fatalf("second worker exited with %v; log:\n%s", err, c.logs.String())
	}

	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.OrderID
	}
	if n := b.count(t, `SELECT count(*) FROM orders WHERE id = ANY($1)`, ids); n != len(recs) {
		t.Fatalf("%d of the %d orders in Postgres", n, len(recs))
	}
	for table, want := range map[string]int{"orders": len(recs), "tickets": 2 * len(recs), "outbox": len(recs), "dead_letters": 0} {
		if n := b.count(t, `SELECT count(*) FROM `+table); n != want {
			t.Fatalf("%s has %d rows, want %d", table, n, want)
		}
	}
	if got := c.logs.takeovers(t); got[dead] != held {
		t.Fatalf("takeover log lines %v, want %s with %d entries; log:\n%s", got, dead, held, c.logs.String())
	}
	n, err := rc.Do(ctx, rc.B().Exists().Key(space.WorkerAlive(c.consumer(t))).Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("the stopped worker's liveness key: exists %d, %v", n, err)
	}
}
