// Command mkimage builds ratelab's OCI image from the static binaries of
// `make dist`, without a container daemon: one layer holding mockllm and
// loadgen in /usr/local/bin on an empty base (scratch), entrypoint mockllm
// listening on 0.0.0.0:8080, run as an unprivileged user. `make image` runs
// it; see `go run ./internal/mkimage --help`.
//
// It writes, under --out:
//
//	oci/                      an OCI image layout: one multi-platform index,
//	                          named --name:--tag (skopeo, crane, podman load
//	                          of its tar, docker load on Docker 25+)
//	ratelab-linux-ARCH.tar    one image per platform in the tarball format
//	                          `docker load` and `podman load` read everywhere
//
// The output is reproducible: every timestamp in the layer and the config is
// --created (default $SOURCE_DATE_EPOCH, else the Unix epoch), files are
// owned by root, and entries are in a fixed order, so the same binaries give
// the same digests.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// The image's fixed parts.
const (
	binDir = "/usr/local/bin"
	// port is mockllm's port in the image; MOCKLLM_ADDR sets it so that
	// `docker run IMAGE --rpm 50` still listens where EXPOSE says.
	port = "8080"
	// user is distroless's "nonroot": no root inside the container, and no
	// /etc/passwd needed for a numeric user.
	user = "65532:65532"
)

// binaries are the commands the image holds; the first is the entrypoint.
var binaries = []string{"mockllm", "loadgen"}

// options are mkimage's flags.
type options struct {
	dist, out, name, tag string
	platforms            []v1.Platform
	created              time.Time
	version, revision    string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o         options
		platforms = fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated OS/ARCH list")
		created   = fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time of every file and of the image, in Unix `seconds` (default $SOURCE_DATE_EPOCH, else 0)")
	)
	fs.StringVar(&o.dist, "dist", "dist", "`dir`ectory holding mockllm-OS-ARCH and loadgen-OS-ARCH")
	fs.StringVar(&o.out, "out", "dist/image", "output `dir`ectory")
	fs.StringVar(&o.name, "name", "ratelab/mockllm", "image name")
	fs.StringVar(&o.tag, "tag", "dev", "image tag")
	fs.StringVar(&o.version, "version", "", "org.opencontainers.image.version label (default: --tag)")
	fs.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision label (a VCS revision; none if empty)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	secs := int64(0)
	if *created != "" {
		var err error
		if secs, err = strconv.ParseInt(*created, 10, 64); err != nil || secs < 0 {
			return fmt.Errorf("--created (or SOURCE_DATE_EPOCH): want Unix seconds, got %q", *created)
		}
	}
	o.created = time.Unix(secs, 0).UTC()
	for _, p := range strings.Split(*platforms, ",") {
		pl, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil || pl.OS == "" || pl.Architecture == "" {
			return fmt.Errorf("--platforms: want OS/ARCH like linux/amd64, got %q", p)
		}
		o.platforms = append(o.platforms, *pl)
	}
	if o.version == "" {
		o.version = o.tag
	}
	ref, err := name.NewTag(o.name + ":" + o.tag)
	if err != nil {
		return fmt.Errorf("--name and --tag: %w", err)
	}
	return build(ref, o, stdout)
}

// build writes the layout and the per-platform tarballs.
func build(ref name.Tag, o options, stdout io.Writer) error {
	if err := os.RemoveAll(filepath.Join(o.out, "oci")); err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.platforms {
		img, err := platformImage(o, p)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
		tarPath := filepath.Join(o.out, fmt.Sprintf("ratelab-%s-%s.tar", p.OS, p.Architecture))
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
			return fmt.Errorf("%s: %w", tarPath, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s  %s/%s image %s\n", tarPath, p.OS, p.Architecture, digest)
	}
	dir := filepath.Join(o.out, "oci")
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	// The layout's index.json names one entry, the multi-platform index,
	// with the annotations docker, containerd and podman read as its name.
	err = lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.String(),
	}))
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s  %s, index %s\n", dir, ref.Name(), digest)
	return nil
}

// platformImage is the image of platform p.
func platformImage(o options, p v1.Platform) (v1.Image, error) {
	files := make([]file, 0, len(binaries))
	for _, b := range binaries {
		path := filepath.Join(o.dist, fmt.Sprintf("%s-%s-%s", b, p.OS, p.Architecture))
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w (run make dist first)", err)
		}
		files = append(files, file{name: b, data: data})
	}
	layerTar, err := layerTar(files, o.created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.created}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   created,
		CreatedBy: "make image: " + strings.Join(binaries, ", ") + " in " + binDir,
		Comment:   "static binaries (CGO_ENABLED=0, -trimpath)",
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	cf.Author = "ratelab"
	cf.Config = v1.Config{
		Entrypoint:   []string{binDir + "/" + binaries[0]},
		Env:          []string{"PATH=" + binDir, "MOCKLLM_ADDR=0.0.0.0:" + port},
		ExposedPorts: map[string]struct{}{port + "/tcp": {}},
		User:         user,
		WorkingDir:   "/tmp",
		StopSignal:   "SIGTERM",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "ratelab mockllm",
			"org.opencontainers.image.description": "A mock of the Anthropic and OpenAI APIs that enforces provider rate limits (mockllm), and the load generator (loadgen).",
			"org.opencontainers.image.source":      "https://github.com/ratelab/ratelab",
			"org.opencontainers.image.version":     o.version,
			"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
		},
	}
	if o.revision != "" {
		cf.Config.Labels["org.opencontainers.image.revision"] = o.revision
	}
	return mutate.ConfigFile(img, cf)
}

// file is a binary of the layer.
type file struct {
	name string
	data []byte
}

// layerTar is the layer's file system: the directories down to binDir,
// the binaries in it, and a writable /tmp (loadgen's scratch files, and the
// working directory). Every entry is root's, dated mtime.
func layerTar(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(name string, typ byte, mode int64, size int64) *tar.Header {
		return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: mtime,
			Uname: "root", Gname: "root"}
	}
	for _, d := range []string{"tmp/", "usr/", "usr/local/", "usr/local/bin/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(hdr(d, tar.TypeDir, mode, 0)); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := tw.WriteHeader(hdr(strings.TrimPrefix(binDir, "/")+"/"+f.name, tar.TypeReg, 0o755, int64(len(f.data)))); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
