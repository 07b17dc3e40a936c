package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ratelab/ratelab/internal/loadgen"
)

const validateUsage = `Usage: loadgen validate FILE...

Checks scenario files without running them: the YAML is decoded strictly (an
unknown key or a value of the wrong type is an error) and its meaning is
validated (strategy kinds and their parameters, numbers, names, the server
configuration, expectations). Every problem of a file is printed at once, one a
line, as FILE:LINE: KEY: MESSAGE; a key gets one message, and a value of the
wrong type does not hide the problems elsewhere.

Prints "FILE: ok" for each valid file.

Exit status: 0 when every file is valid; 1 when any is not; 2 on a usage error.
`

// validateCmd implements loadgen validate.
func validateCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), validateUsage) }
	files, ok, err := parseFlags(fs, args, stdout)
	if !ok {
		return err
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, validateUsage)
		return usageError("validate: no files given")
	}
	bad := 0
	for _, file := range files {
		s, err := loadgen.Load(file)
		if err != nil {
			bad++
			var errs loadgen.Errors
			if errors.As(err, &errs) {
				fmt.Fprintln(stdout, errs.Error())
			} else {
				fmt.Fprintf(stdout, "%s: %v\n", file, err)
			}
			continue
		}
		fmt.Fprintf(stdout, "%s: ok (%s, %s)\n", file, plural(s.Items.Count(), "item"), plural(len(s.Strategies), "strategy"))
	}
	if bad > 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("validate: %d of %d files invalid", bad, len(files))}
	}
	return nil
}

// parseFlags parses args with fs, allowing flags after positional arguments
// (loadgen run FILE --format json), and returns the positional arguments.
// With --help it prints the usage to stdout and returns ok = false and no
// error; any other flag error is a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (positional []string, ok bool, err error) {
	// flag prints the usage itself on -h and on errors; print it once, to
	// stdout when asked for and to stderr after an error.
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			usage()
			return nil, false, nil
		}
		if err != nil {
			usage() // after flag's own message, on stderr
			return nil, false, &exitError{code: exitUsage}
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, true, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), true, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// plural formats n with noun, in the plural unless n is 1 (strategy →
// strategies).
func plural(n int, noun string) string {
	switch {
	case n == 1:
	case strings.HasSuffix(noun, "y"):
		noun = strings.TrimSuffix(noun, "y") + "ies"
	default:
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}
