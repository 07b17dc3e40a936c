package reports

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// node is a minimal element tree for checking rendered HTML.
type node struct {
	name     string
	attrs    map[string]string
	children []*node
	text     strings.Builder // all text inside, children's included
	parent   *node
}

// parseDOM parses markup into a tree. strict demands well-formed XML, which
// HTML renders by construction; otherwise it accepts browser-serialized
// HTML such as Chromium's --dump-dom.
func parseDOM(t *testing.T, data []byte, strict bool) *node {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = strict
	if !strict {
		dec.AutoClose = xml.HTMLAutoClose
		dec.Entity = xml.HTMLEntity
	}
	root := &node{name: "#root", attrs: map[string]string{}}
	cur := root
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parse html: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: strings.ToLower(tok.Name.Local), attrs: map[string]string{}, parent: cur}
			for _, a := range tok.Attr {
				n.attrs[strings.ToLower(a.Name.Local)] = a.Value
			}
			cur.children = append(cur.children, n)
			cur = n
		case xml.EndElement:
			if cur.parent != nil {
				cur = cur.parent
			}
		case xml.CharData:
			for n := cur; n != nil; n = n.parent {
				n.text.Write(tok)
			}
		}
	}
	return root
}

// find returns every element under n, in document order, for which match
// is true.
func (n *node) find(match func(*node) bool) []*node {
	var out []*node
	for _, c := range n.children {
		if match(c) {
			out = append(out, c)
		}
		out = append(out, c.find(match)...)
	}
	return out
}

// hasClass reports whether n's class attribute lists class.
func (n *node) hasClass(class string) bool {
	for _, c := range strings.Fields(n.attrs["class"]) {
		if c == class {
			return true
		}
	}
	return false
}

func elem(name string) func(*node) bool {
	return func(n *node) bool { return n.name == name }
}

func byClass(name, class string) func(*node) bool {
	return func(n *node) bool { return n.name == name && n.hasClass(class) }
}

// chartSeries maps each drawn series of a chart to its path data.
func chartSeries(svg *node) map[string]string {
	out := map[string]string{}
	for _, p := range svg.find(byClass("path", "series")) {
		out[p.attrs["data-series"]] = p.attrs["d"]
	}
	return out
}
