package mock

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ratelab/ratelab/internal/fielderr"
	"github.com/ratelab/ratelab/internal/strict"
	"github.com/ratelab/ratelab/profiles"
)

// Profile is a provider profile: a Config fragment holding the limits a
// provider documents for an account tier, with where they come from. The
// files are profiles/*.yaml, embedded in the binary; Profiles lists them,
// mockllm --profile NAME and a configuration's profile key start from one.
type Profile struct {
	Name        string `yaml:"name"`
	Provider    string `yaml:"provider"` // one of profileProviders
	Description string `yaml:"description"`
	Source      string `yaml:"source"`  // the page the figures come from
	Checked     string `yaml:"checked"` // the date they were checked, YYYY-MM-DD
	// Config is DefaultConfig with the file's server: block.
	Config Config `yaml:"-"`
}

// profileFile is the schema of a profiles/*.yaml file.
type profileFile struct {
	Profile `yaml:",inline"`
	Server  yaml.Node `yaml:"server"`
}

// Profiles returns the embedded provider profiles, sorted by name, or the
// error of a profile file that does not parse (a build defect, which a
// test guards against).
func Profiles() ([]Profile, error) { return loadProfiles() }

// LookupProfile returns the profile called name.
func LookupProfile(name string) (Profile, error) {
	ps, err := loadProfiles()
	if err != nil {
		return Profile{}, err
	}
	var names []string
	for _, p := range ps {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("unknown profile %q (want one of %s; mockllm profiles lists them)", name, strings.Join(names, ", "))
}

var loadProfiles = sync.OnceValues(func() ([]Profile, error) { return parseProfiles(profiles.FS) })

// parseProfiles reads every *.yaml file of fsys as a profile.
func parseProfiles(fsys fs.FS) ([]Profile, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []Profile
	var errs []string
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		p, err := parseProfile(data, "profiles/"+f)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	slices.SortFunc(out, func(a, b Profile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// parseProfile parses one profile file strictly: every key known, the
// name equal to the file's, a provider, a source and a checked date, and a
// server: block that is a valid Config naming no profile itself.
// profileProviders are the values of a profile's provider key: the
// provider whose documented tier the profile describes.
var profileProviders = []string{"anthropic", "openai", "azure-openai"}

func parseProfile(data []byte, filename string) (Profile, error) {
	root, err := strict.Parse(filename, data)
	if err != nil {
		return Profile{}, err
	}
	d := strict.NewDecoder(filename)
	var pf profileFile
	if root != nil {
		d.Decode(root, &pf, "")
	}
	if err := d.Err(); err != nil {
		return Profile{}, err
	}
	var errs strict.Errors
	check := func(ok bool, key, format string, args ...any) {
		if !ok {
			errs = append(errs, &strict.Error{Path: key, Message: fmt.Sprintf(format, args...)})
		}
	}
	want := strings.TrimSuffix(path.Base(filename), ".yaml")
	check(pf.Name == want, "name", "must be the file's name, %q, got %q", want, pf.Name)
	check(slices.Contains(profileProviders, pf.Provider), "provider", "want one of %s, got %q", strings.Join(profileProviders, ", "), pf.Provider)
	check(strings.Contains(pf.Source, "https://"), "source", "must name the page the figures come from, got %q", pf.Source)
	_, terr := time.Parse(time.DateOnly, pf.Checked)
	check(terr == nil, "checked", "want the date the figures were checked, YYYY-MM-DD, got %q", pf.Checked)
	type plain Config // a profile does not start from another one
	cfg := plain(DefaultConfig())
	d.Decode(&pf.Server, &cfg, "server")
	check(cfg.Profile == "", "server.profile", "a profile cannot start from another profile")
	d.Place("", errs.Err())
	d.Place("server", Config(cfg).Validate())
	if err := d.Err(); err != nil {
		return Profile{}, err
	}
	p := pf.Profile
	p.Config = Config(cfg)
	return p, nil
}

// profileBase is the Config that a configuration node n starts from: the
// profile its profile key names, or DefaultConfig.
func profileBase(d *strict.Decoder, n *yaml.Node, path string) Config {
	if n.Kind != yaml.MappingNode {
		return DefaultConfig()
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "profile" {
			continue
		}
		v := n.Content[i+1]
		if v.Kind != yaml.ScalarNode || strict.IsNull(v) {
			break // the decoder reports the wrong type
		}
		p, err := LookupProfile(v.Value)
		if err != nil {
			d.Errorf(v, fielderr.Join(path, "profile"), "%v", err)
			break
		}
		return p.Config
	}
	return DefaultConfig()
}

// withProfile makes the configuration node root start from profile, as
// mockllm --profile does: it adds profile: NAME to the mapping, or refuses
// a file that names another profile.
func withProfile(root *yaml.Node, profile string) error {
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root == nil || root.Kind != yaml.MappingNode {
		return nil // the decoder reports a file that is not a mapping
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "profile" {
			if v := root.Content[i+1].Value; v != profile {
				return fmt.Errorf("%d: profile: the file names %q and --profile %q; name one", root.Content[i].Line, v, profile)
			}
			return nil
		}
	}
	root.Content = append([]*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "profile", Tag: "!!str"},
		{Kind: yaml.ScalarNode, Value: profile, Tag: "!!str"},
	}, root.Content...)
	return nil
}
