package batchrun

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/loadgen"
	"github.com/ratelab/ratelab/strategies"
)

// TestWithSharedFlags: batch's --shared-* flags override a config
// strategy's shared: block field by field, or make one, and their problems
// name the flags.
func TestWithSharedFlags(t *testing.T) {
	fromConfig := &loadgen.Shared{Redis: "redis://config:6379/0", Key: "team-a", LeaseTTL: time.Minute, Peers: 2}
	tests := []struct {
		name    string
		kind    string
		config  *loadgen.Shared
		flags   loadgen.Shared
		want    *loadgen.Shared
		wantErr string
	}{
		{"no flags keep the config", loadgen.KindSemaphore, fromConfig, loadgen.Shared{}, fromConfig, ""},
		{"no flags, no block", loadgen.KindAdaptive, nil, loadgen.Shared{}, nil, ""},
		{"flags make a block", loadgen.KindSemaphore, nil, loadgen.Shared{Redis: "redis://flag:6379/1", Key: "k"},
			&loadgen.Shared{Redis: "redis://flag:6379/1", Key: "k"}, ""},
		{"flags override fields", loadgen.KindTokenFirst, fromConfig, loadgen.Shared{Key: "team-b", Peers: 4, OpTimeout: time.Second},
			&loadgen.Shared{Redis: "redis://config:6379/0", Key: "team-b", LeaseTTL: time.Minute, Peers: 4, OpTimeout: time.Second}, ""},
		{"key without redis", loadgen.KindSemaphore, nil, loadgen.Shared{Key: "k"}, nil, "--shared-redis: required"},
		{"short lease", loadgen.KindSemaphore, nil, loadgen.Shared{Redis: "redis://h:1/0", Key: "k", LeaseTTL: time.Millisecond}, nil, "--shared-lease-ttl: must be at least 10ms"},
		{"kind", loadgen.KindAIMD, nil, loadgen.Shared{Redis: "redis://h:1/0", Key: "k"}, nil, "--strategy: kind aimd cannot share its limits"},
		{"adaptive shares", loadgen.KindAdaptive, nil, loadgen.Shared{Redis: "redis://h:1/0", Key: "k"}, &loadgen.Shared{Redis: "redis://h:1/0", Key: "k"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &loadgen.Row{Name: "s", Kind: tt.kind, Shared: tt.config}
			got, err := withSharedFlags(st, tt.flags)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUsage) {
					t.Fatalf("error = %v, want a usage error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("withSharedFlags: %v", err)
			}
			if !reflect.DeepEqual(got.Shared, tt.want) {
				t.Errorf("shared = %+v, want %+v", got.Shared, tt.want)
			}
			if tt.config != nil && *tt.config != *fromConfig {
				t.Errorf("the config's block was changed: %+v", *tt.config)
			}
		})
	}
}

func TestParseStrategySpec(t *testing.T) {
	tests := []struct {
		spec    string
		kind    string
		requeue bool
		check   func(*loadgen.Row) bool
		err     string
	}{
		{spec: "adaptive", kind: loadgen.KindAdaptive, requeue: true},
		{spec: "semaphore:n=20", kind: loadgen.KindSemaphore, requeue: true, check: func(s *loadgen.Row) bool {
			return *s.Config.(*strategies.SemaphoreConfig) == strategies.SemaphoreConfig{Max: 20}
		}},
		{spec: "token-bucket:rpm=50, tpm=40000", kind: loadgen.KindTokenBucket, requeue: true, check: func(s *loadgen.Row) bool {
			return *s.Config.(*strategies.TokenBucketConfig) == strategies.TokenBucketConfig{RPM: 50, TPM: 40000}
		}},
		{spec: "aimd:max=64,requeue=false,max_retries=5", kind: loadgen.KindAIMD, check: func(s *loadgen.Row) bool {
			return *s.Config.(*strategies.AIMDConfig) == strategies.AIMDConfig{Max: 64} && s.Retries() == 5
		}},
		{spec: "adaptive:state_file=/tmp/a.json", kind: loadgen.KindAdaptive, requeue: true, check: func(s *loadgen.Row) bool { return s.StateFile() == "/tmp/a.json" }},
		{spec: "semaphore", err: "n: required"},
		{spec: "semaphore:n", err: "want KIND or KIND:KEY=VALUE"},
		{spec: "semaphore:n=ten", err: `n: want an integer, got "ten"`},
		{spec: "semaphore:n=-3", err: `"semaphore:n=-3": n: must not be negative, got -3`},
		{spec: "semaphore:nn=3", err: `nn: unknown key "nn" (did you mean n?)`},
		{spec: "fastest", err: `unknown kind "fastest"`},
		{spec: "semaphore:n=2,rpm=5", err: "rpm: not a parameter of kind semaphore"},
		{spec: "semaphore:n={x: 1}", err: "want KIND or KIND:KEY=VALUE"},
	}
	for _, tt := range tests {
		st, err := ParseStrategySpec(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrUsage) {
				t.Errorf("ParseStrategySpec(%q) = %v, want a usage error containing %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseStrategySpec(%q): %v", tt.spec, err)
			continue
		}
		if st.Kind != tt.kind || st.Requeue != tt.requeue || st.Name != tt.spec || (tt.check != nil && !tt.check(st)) {
			t.Errorf("ParseStrategySpec(%q) = %+v, want kind %s, requeue %v", tt.spec, st, tt.kind, tt.requeue)
		}
	}
}
