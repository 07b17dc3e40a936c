package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// buildDist builds static linux binaries of both commands for this machine's
// architecture into dir, named as make dist names them, with make dist's
// flags.
func buildDist(t *testing.T, dir string) {
	t.Helper()
	for _, b := range binaries {
		out := filepath.Join(dir, fmt.Sprintf("%s-linux-%s", b, runtime.GOARCH))
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "../../cmd/"+b)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b, err, msg)
		}
	}
}

// TestImage builds the image as make image does, reads it back from both
// outputs, unpacks its layer and runs what it holds: `mockllm --version`,
// `loadgen --version`, and a mockllm that answers a real POST /v1/messages.
// No container daemon is needed.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mockllm and loadgen (about 30 s on a cold cache)")
	}
	dist := t.TempDir()
	buildDist(t, dist)
	platform := "linux/" + runtime.GOARCH
	args := []string{"--dist", dist, "--platforms", platform, "--tag", "v9.8.7", "--created", "1700000000", "--revision", "abc123"}

	out1, out2 := t.TempDir(), t.TempDir()
	var stdout bytes.Buffer
	if err := run(context.Background(), append(args, "--out", out1), &stdout, io.Discard); err != nil {
		t.Fatalf("mkimage: %v", err)
	}
	if err := run(context.Background(), append(args, "--out", out2), io.Discard, io.Discard); err != nil {
		t.Fatalf("mkimage, second time: %v", err)
	}
	// Reproducible: a second build from the same binaries is the same bytes.
	tarName := "ratelab-linux-" + runtime.GOARCH + ".tar"
	for _, rel := range []string{tarName, "oci/index.json"} {
		if a, b := sum(t, filepath.Join(out1, rel)), sum(t, filepath.Join(out2, rel)); a != b {
			t.Errorf("%s differs between two builds: %s, %s", rel, a, b)
		}
	}

	// The docker-load tarball: one image, tagged NAME:TAG.
	tag := "ratelab/mockllm:v9.8.7"
	img, err := tarball.ImageFromPath(filepath.Join(out1, tarName), nil)
	if err != nil {
		t.Fatalf("reading the tarball back: %v", err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(filepath.Join(out1, tarName)) })
	if err != nil || len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{tag}) {
		t.Errorf("tarball manifest.json = %+v, %v; want one image tagged %s", m, err, tag)
	}

	// The OCI layout: index.json names the multi-platform index, whose
	// manifest for this platform is the tarball's image.
	lidx, err := layout.ImageIndexFromPath(filepath.Join(out1, "oci"))
	if err != nil {
		t.Fatalf("reading the layout back: %v", err)
	}
	lm, err := lidx.IndexManifest()
	if err != nil || len(lm.Manifests) != 1 || lm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v9.8.7" ||
		lm.Manifests[0].Annotations["io.containerd.image.name"] != "ratelab/mockllm:v9.8.7" {
		t.Fatalf("oci/index.json = %+v, %v; want one entry named v9.8.7", lm, err)
	}
	multi, err := lidx.ImageIndex(lm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	mm, err := multi.IndexManifest()
	if err != nil || len(mm.Manifests) != 1 || mm.Manifests[0].Platform == nil ||
		mm.Manifests[0].Platform.String() != platform || mm.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("the layout's index = %+v, %v; want one %s manifest", mm, err, platform)
	}
	limg, err := multi.Image(mm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// A docker tarball keeps the config and the layers, not the manifest.
	lc, _ := limg.ConfigName()
	tc, _ := img.ConfigName()
	if lc != tc {
		t.Errorf("layout's %s config %s, tarball's %s: want the same image", platform, lc, tc)
	}
	if mt, _ := limg.MediaType(); mt != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest media type = %s, want OCI's", mt)
	}

	// The config: what `docker run` does with the image.
	cf, err := limg.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(time.Unix(1700000000, 0)) ||
		!slices.Equal(c.Entrypoint, []string{"/usr/local/bin/mockllm"}) || len(c.Cmd) != 0 ||
		!slices.Contains(c.Env, "MOCKLLM_ADDR=0.0.0.0:8080") || c.User != "65532:65532" ||
		!reflectKeys(c.ExposedPorts, "8080/tcp") || c.Labels["org.opencontainers.image.revision"] != "abc123" ||
		c.Labels["org.opencontainers.image.version"] != "v9.8.7" {
		t.Errorf("config = %+v (os %s, arch %s, created %v)", c, cf.OS, cf.Architecture, cf.Created)
	}
	if ls, _ := limg.Layers(); len(ls) != 1 {
		t.Errorf("%d layers, want 1 on scratch", len(ls))
	}

	// Unpack the file system and run it.
	root := t.TempDir()
	names := unpack(t, limg, root)
	wantNames := []string{"tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/mockllm", "usr/local/bin/loadgen"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("layer entries = %q, want %q", names, wantNames)
	}
	if runtime.GOOS != "linux" {
		t.Skipf("the image's linux binaries do not run on %s", runtime.GOOS)
	}
	for _, b := range binaries {
		out, err := exec.Command(filepath.Join(root, "usr/local/bin", b), "--version").CombinedOutput()
		if re := regexp.MustCompile(`^` + b + ` \S+ \(revision \S+, go\S+\)\n$`); err != nil || !re.MatchString(string(out)) {
			t.Errorf("%s --version = %q, %v; want a line matching %s", b, out, err, re)
		}
	}
	serve(t, filepath.Join(root, "usr/local/bin/mockllm"), c.Env)
}

// serve starts the unpacked mockllm with the image's environment, on a
// loopback port (the flag wins over the image's MOCKLLM_ADDR), and checks
// its answer to one Messages call.
func serve(t *testing.T, bin string, env []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "--addr", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(pr).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("first line %q, %v; want listening on http://...\nstderr: %s", line, err, stderr.String())
	}
	body := `{"model":"claude-haiku-4-5","max_tokens":8,"messages":[{"role":"user","content":"hello from the image test"}]}`
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/messages", strings.NewReader(body))
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/messages: %v", err)
	}
	var msg struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	derr := json.NewDecoder(resp.Body).Decode(&msg)
	resp.Body.Close()
	if resp.StatusCode != 200 || derr != nil || msg.Type != "message" || msg.Role != "assistant" ||
		len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text == "" ||
		msg.Usage.InputTokens < 1 || msg.Usage.OutputTokens < 1 || msg.Usage.OutputTokens > 8 {
		t.Errorf("POST /v1/messages: status %d, %+v, %v; want 200 and an assistant message of 1 to 8 tokens", resp.StatusCode, msg, derr)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(url + probe)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s = %v, %v; want 200", probe, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	// SIGTERM (docker stop) shuts it down gracefully: exit 0, and a JSON
	// record on stderr.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stop := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer stop.Stop()
	if err := cmd.Wait(); err != nil {
		t.Errorf("mockllm after SIGTERM: %v, want exit 0\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"shutting down"`) {
		t.Errorf("stderr = %q, want a JSON shutting down record", stderr.String())
	}
}

// unpack writes img's file system under root and returns the entry names in
// layer order.
func unpack(t *testing.T, img v1.Image, root string) []string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s: uid %d gid %d mtime %v, want root's, at --created", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		path := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if want := map[string]int64{"tmp": 0o1777}[h.Name]; want != 0 && h.Mode != want {
				t.Errorf("%s: mode %o, want %o (writable by the image's user)", h.Name, h.Mode, want)
			}
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if h.Mode&0o111 == 0 {
				t.Errorf("%s: mode %o, want executable", h.Name, h.Mode)
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		default:
			t.Errorf("%s: unexpected entry type %c", h.Name, h.Typeflag)
		}
	}
	return names
}

func sum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

func reflectKeys(m map[string]struct{}, keys ...string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func TestFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--created", "yesterday"}, `--created (or SOURCE_DATE_EPOCH): want Unix seconds, got "yesterday"`},
		{[]string{"--platforms", "linux"}, `--platforms: want OS/ARCH like linux/amd64, got "linux"`},
		{[]string{"--tag", "a b"}, "--name and --tag"},
		{[]string{"--dist", "/nonexistent", "--out", t.TempDir()}, "mockllm-linux-amd64: no such file or directory (run make dist first)"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
	} {
		err := run(context.Background(), tt.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("mkimage %q = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}
