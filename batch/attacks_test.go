//go:build linux

package batch

import (
	"fmt"
	"github.com/ratelab/ratelab/internal/fakeclient"
	"os"
	"strings"
	"syscall"
	"testing"
)

// Attacks that held when issue 10 was filed, kept as tests so they keep
// holding.

// TestBatchDiskFull runs a batch whose output is on a filesystem that fills
// up part-way: the run stops with an error naming the output and the
// cause, and a rerun once there is room again (the output repaired if the
// last write was torn) leaves every id in the output exactly once. The
// full disk is a real one, a small tmpfs, so the write fails inside the
// kernel as it would in production; mounting it needs root.
func TestBatchDiskFull(t *testing.T) {
	const n = 400
	dir := t.TempDir() + "/disk"
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// 16 KiB holds the first few dozen of the 400 result lines.
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16k"); err != nil {
		t.Skipf("mounting a 16 KiB tmpfs to fill up needs root (CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	c := &fakeclient.Client{}
	b := newTestBatch(t, c, n)
	b.Output = dir + "/results.jsonl"

	sum, err := b.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), b.Output) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("Run on a full disk: %v, want an error naming %s and no space left on device", err, b.Output)
	}
	st, serr := os.Stat(b.Output)
	if serr != nil {
		t.Fatal(serr)
	}
	if sum.Completed == 0 || sum.Completed >= n || sum.Remaining != n-sum.Completed {
		t.Errorf("first run: completed %d, remaining %d of %d, want part of the batch done and the rest remaining", sum.Completed, sum.Remaining, n)
	}
	firstCalls := c.Calls.Load()
	t.Logf("disk full after %d bytes: completed %d, remaining %d, calls %d", st.Size(), sum.Completed, sum.Remaining, firstCalls)

	// Every result the run counted as written is whole in the output; a
	// torn tail is repaired by the rerun, never counted.
	data, err := os.ReadFile(b.Output)
	if err != nil {
		t.Fatal(err)
	}
	whole, torn := strings.Count(string(data), "\n"), len(data) > 0 && data[len(data)-1] != '\n'
	if whole != sum.Completed {
		t.Errorf("output holds %d complete lines, the run counted %d written", whole, sum.Completed)
	}

	// Room again: the rerun makes exactly the items missing from the output.
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=1m"); err != nil {
		t.Fatalf("remount larger: %v", err)
	}
	sum2, err := b.Run(t.Context())
	if err != nil {
		t.Fatalf("rerun with room: %v", err)
	}
	if want := map[bool]int{true: whole + 1}[torn]; sum2.Repaired != want {
		t.Errorf("rerun: repaired line %d, want %d (torn tail: %v)", sum2.Repaired, want, torn)
	}
	if sum2.DoneOK != whole || sum2.Completed != n-whole || !sum2.AllOK() {
		t.Errorf("rerun: done %d, completed %d, want %d and %d, all ok", sum2.DoneOK, sum2.Completed, whole, n-whole)
	}
	if got := c.Calls.Load() - firstCalls; got != int64(n-whole) {
		t.Errorf("rerun made %d calls, want %d (only the items without a line)", got, n-whole)
	}
	for id, rs := range checkExactlyOnce(t, b.Output, n) {
		if !rs[0].OK() || rs[0].Text != fmt.Sprintf("ok p%s", strings.TrimPrefix(id, "id-")) {
			t.Errorf("%s: %+v, want its own success", id, rs[0])
		}
	}
}
