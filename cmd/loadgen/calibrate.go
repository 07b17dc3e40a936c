package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/calibrate"
	"github.com/ratelab/ratelab/internal/record"
)

const calibrateUsage = `Usage: loadgen calibrate FILE... [-o profile.yaml] [--admin-key KEY [--admin-url URL] [--admin-project ID]]

Fits a mock configuration (the server: schema of mockllm --config and of a
scenario's server: block) to recordings written by loadgen run --record:
the concurrency cap, requests and tokens per minute and the bucket's burst,
the retry-after policy, time to first token, per-token latency and jitter,
the output-length distribution and the 5xx rates. Prints each value with its
evidence and uncertainty, and what the recordings could not determine.

Flags:
  -o FILE   write the profile to FILE (loadgen run --profile FILE reads
            it); without it the profile goes to stdout and the report to
            stderr
  --admin-key KEY
            also read the limits the provider publishes for the recorded
            model from its rate-limit admin endpoint (Anthropic's
            organisation rate limits, OpenAI's project rate limits) with
            this admin key (env:NAME reads it from $NAME); a published
            limit beats the recording's headers
  --admin-url URL
            the admin endpoint's base URL (default the provider's own:
            https://api.anthropic.com, https://api.openai.com)
  --admin-project ID
            OpenAI's project id (proj_...), whose rate limits are read
  --save    also keep the profile for the recordings' provider and key (its
            fingerprint, never the key) under the user's cache directory,
            where loadgen run --profile auto finds it for later runs with
            that key

See docs/calibrate.md.
`

// calibrateCmd implements loadgen calibrate.
func calibrateCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), calibrateUsage) }
	out := fs.String("o", "", "write the profile to FILE")
	adminKey := fs.String("admin-key", "", "read the published limits with this admin key")
	adminURL := fs.String("admin-url", "", "the admin endpoint's base URL")
	adminProject := fs.String("admin-project", "", "OpenAI's project id")
	save := fs.Bool("save", false, "keep the profile for the recordings' provider and key")
	files, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, calibrateUsage)
		return usageError("calibrate: want at least one recording")
	}
	var recs []*record.File
	for _, path := range files {
		f, err := record.Read(path)
		if err != nil {
			return usageError("calibrate: %v", err)
		}
		for _, w := range f.Warnings {
			fmt.Fprintln(stderr, "warning:", w)
		}
		recs = append(recs, f)
	}
	if (*adminURL != "" || *adminProject != "") && *adminKey == "" {
		return usageError("calibrate: --admin-url and --admin-project need --admin-key KEY")
	}
	fit, err := calibrate.Run(recs) // bad recordings are told before any admin request
	if err != nil {
		return usageError("%v", err)
	}
	if *adminKey != "" {
		pub, err := readPublished(recs, *adminKey, *adminURL, *adminProject, stderr)
		if err != nil {
			return usageError("calibrate: %v", err)
		}
		if fit, err = calibrate.RunPublished(recs, pub); err != nil {
			return usageError("%v", err)
		}
	}
	report := stdout
	if *out == "" {
		report = stderr
	}
	for _, l := range fit.Lines {
		fmt.Fprintln(report, l)
	}
	if *save {
		if err := saveProfile(recs, fit, files, report); err != nil {
			return usageError("calibrate: --save: %v", err)
		}
	}
	if *out == "" {
		_, err := io.WriteString(stdout, fit.YAML())
		return err
	}
	if err := os.WriteFile(*out, []byte(fit.YAML()), 0o644); err != nil {
		return usageError("calibrate: -o: %v", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// readPublished reads the published limits of the recordings' provider and
// model with the admin key (env:NAME: from $NAME).
func readPublished(recs []*record.File, key, url, project string, stderr io.Writer) (*calibrate.Published, error) {
	if name, ok := strings.CutPrefix(key, "env:"); ok {
		if key = os.Getenv(name); key == "" {
			return nil, fmt.Errorf("--admin-key env:%s: $%s is empty or unset", name, name)
		}
	}
	provider := ""
	for _, f := range recs {
		for _, a := range f.Attempts {
			if provider == "" {
				provider = a.Provider
			}
		}
	}
	model, models := calibrate.Model(recs)
	if models > 1 {
		fmt.Fprintf(stderr, "warning: the recordings name %d models; the published limits read are %s's, the most common\n", models, model)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return calibrate.ReadPublished(ctx, &http.Client{Timeout: 30 * time.Second}, calibrate.AdminRequest{
		Provider: provider, BaseURL: url, Key: key, Project: project, Model: model,
	})
}

// saveProfile keeps fit's profile where loadgen run --profile auto looks
// for the recordings' provider and key (savedProfile). Recordings of more
// than one key are an error: the limits fitted are one key's.
func saveProfile(recs []*record.File, fit *calibrate.Fit, files []string, report io.Writer) error {
	keys := map[string]string{} // label → where first seen
	for _, f := range recs {
		for i, a := range f.Attempts {
			k := a.Key
			if k == "" {
				k = noKey // an earlier recording's label of no key
			}
			if _, ok := keys[k]; !ok {
				keys[k] = fmt.Sprintf("%s:%d", f.Path, f.Lines[i])
			}
		}
	}
	if len(keys) > 1 {
		var s []string
		for k, at := range keys {
			s = append(s, fmt.Sprintf("%s at %s", keyName(k), at))
		}
		slices.Sort(s)
		return fmt.Errorf("the recordings hold %d keys (%s): a saved profile is one key's; calibrate each key's recording on its own", len(keys), strings.Join(s, ", "))
	}
	label := ""
	for k := range keys {
		label = k
	}
	path, err := savedProfile(fit.Provider, label)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	head := fmt.Sprintf("# Saved by loadgen calibrate --save for %s key %s from %s at %s.\n", fit.Provider, keyName(label), strings.Join(files, ", "), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(path, []byte(head+fit.YAML()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(report, "saved %s: the profile of %s key %s, which loadgen run --profile auto uses for that key\n", path, fit.Provider, keyName(label))
	return nil
}
