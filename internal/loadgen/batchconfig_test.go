package loadgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadBatchConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	s, err := LoadBatchConfig(write("ok.yaml", "request: {provider: openai, model: gpt-x}\ntarget: {url: http://127.0.0.1:9, api_key_env: MY_KEY}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Request.Provider != "openai" || s.Target.APIKeyEnv != "MY_KEY" || len(s.Strategies) != 0 {
		t.Errorf("config = %+v", s)
	}
	_, err = LoadBatchConfig(write("bad.yaml", "request:\n  modle: x\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:2: request.modle: unknown key") {
		t.Errorf("bad config: %v, want bad.yaml:2: request.modle: unknown key", err)
	}
	// A scenario file is a valid config: its items are not used.
	if _, err := LoadBatchConfig("../../scenarios/20-concurrent.yaml"); err != nil {
		t.Errorf("a shipped scenario as a config: %v", err)
	}
}
