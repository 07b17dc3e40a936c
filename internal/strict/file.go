package strict

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxFileBytes is the largest configuration file ReadFile and Parse accept.
// A scenario or a mock configuration is a few kilobytes; parsing a 50 MB
// YAML file took 1.3 GB of memory, so a larger file is refused before it is
// parsed.
const MaxFileBytes = 4 << 20

// ReadFile reads the configuration file at path, refusing one larger than
// MaxFileBytes without reading all of it. Its error is an *Error naming the
// file.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Message: pathMessage(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: path, Message: pathMessage(err)}
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(file string) *Error {
	return &Error{File: file, Message: fmt.Sprintf("file larger than %d MiB, the limit for a configuration file; is it the right file?", MaxFileBytes>>20)}
}

// pathMessage is err without the path, which the Error already names.
func pathMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse parses data, the YAML file named file, into its one document's root
// node: nil for an empty document. More than one document, a syntax error
// or more than MaxFileBytes is an *Error.
func Parse(file string, data []byte) (*yaml.Node, error) {
	if len(data) > MaxFileBytes {
		return nil, tooLarge(file)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return nil, &Error{File: file, Line: line, Message: "more than one YAML document"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, nil
		}
		root = root.Content[0]
	}
	return root, nil
}

// syntaxError turns a yaml.v3 parse error ("yaml: line 3: …") into an Error.
func syntaxError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, e := fmt.Sscanf(msg, "line %d:", &line); e == nil {
		_, rest, _ := strings.Cut(msg, ":")
		return &Error{File: file, Line: line, Message: "invalid YAML:" + rest}
	}
	return &Error{File: file, Message: "invalid YAML: " + msg}
}

// Unmarshal parses data, the YAML file named file, and decodes it into the
// value v points to. An empty document leaves v as it was. The error, if
// any, is an Errors with every problem.
func Unmarshal(file string, data []byte, v any) error {
	root, err := Parse(file, data)
	if err != nil {
		return Errors{err.(*Error)}
	}
	d := NewDecoder(file)
	if root != nil {
		d.Decode(root, v, "")
	}
	return d.Err()
}
