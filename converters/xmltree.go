package converters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
)

// The XML job lists (Quartz's job scheduling data, Windows Task
// Scheduler's tasks) share their reading: a whole document into a tree of
// elements with their lines, UTF-16 or UTF-8, and the front that picks
// the converter by the root element.

// readWholeExport checks the folder's defaults an XML export needs (a
// topic: the formats name none), then reads r whole, at most limit bytes.
// noun names a document in errors ("the job XML"), kind its format ("Quartz
// job XML").
func readWholeExport(file string, r io.Reader, opts Options, limit int, noun, kind string) (Defaults, *time.Location, []byte, error) {
	defaults, folderLoc, derrs := normalizeDefaults(opts.Defaults)
	var errs []error
	for _, err := range derrs {
		errs = append(errs, &RowError{File: file, Err: err})
	}
	if defaults.Topic == "" {
		errs = append(errs, &RowError{File: file, Column: "topic", Err: fmt.Errorf("%s names no topic: set defaults.topic for the folder", noun)})
	}
	if len(errs) > 0 {
		return defaults, nil, nil, errors.Join(errs...)
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return defaults, nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > limit {
		return defaults, nil, nil, fmt.Errorf("%s: larger than %d MiB; is this %s?", file, limit>>20, kind)
	}
	return defaults, folderLoc, data, nil
}

// xmlNode is an element with the line it starts on.
type xmlNode struct {
	name  string
	space string
	line  int
	text  string
	kids  []*xmlNode
	// path is where it lies: job-scheduling-data/schedule[1]/trigger[2].
	path string
}

// child returns the first child named name, or nil.
func (n *xmlNode) child(name string) *xmlNode {
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// value is the trimmed text of the child named name, "" when absent.
func (n *xmlNode) value(name string) string {
	if k := n.child(name); k != nil {
		return strings.TrimSpace(k.text)
	}
	return ""
}

// parseXMLTree reads a whole document into nodes, recording the line of
// each start tag.
func parseXMLTree(ctx context.Context, data []byte) (*xmlNode, error) {
	return parseXMLTreeCharset(ctx, data, nil)
}

// parseXMLTreeCharset is parseXMLTree with the decoder's CharsetReader: a
// document already decoded to UTF-8 may still declare the encoding it was
// written in.
func parseXMLTreeCharset(ctx context.Context, data []byte, charset func(string, io.Reader) (io.Reader, error)) (*xmlNode, error) {
	var newlines []int
	for i, b := range data {
		if b == '\n' {
			newlines = append(newlines, i)
		}
	}
	lineAt := func(off int64) int { return sort.SearchInts(newlines, int(off)) + 1 }
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.CharsetReader = charset
	var root *xmlNode
	var stack []*xmlNode
	counts := []map[string]int{{}}
	for i := 0; ; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxQuartzDepth {
				return nil, fmt.Errorf("line %d: elements nested deeper than %d", lineAt(off), maxQuartzDepth)
			}
			n := &xmlNode{name: t.Name.Local, space: t.Name.Space, line: lineAt(off)}
			c := counts[len(counts)-1]
			c[n.name]++
			n.path = n.name
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				parent.kids = append(parent.kids, n)
				n.path = fmt.Sprintf("%s/%s[%d]", parent.path, n.name, c[n.name])
			} else if root != nil {
				return nil, fmt.Errorf("line %d: a second root element <%s>", n.line, n.name)
			} else {
				root = n
			}
			stack = append(stack, n)
			counts = append(counts, map[string]int{})
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			counts = counts[:len(counts)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}

// decodeXMLBytes returns an XML document as UTF-8: decoded from UTF-16
// when it starts with a UTF-16 byte order mark or with "<" as UTF-16,
// without a UTF-8 byte order mark otherwise.
func decodeXMLBytes(b []byte) []byte {
	var enc encoding.Encoding
	switch {
	case len(b) >= 2 && (b[0] == 0xFF && b[1] == 0xFE || b[0] == 0xFE && b[1] == 0xFF):
		enc = unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM)
	case len(b) >= 2 && b[0] == '<' && b[1] == 0:
		enc = unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM)
	case len(b) >= 2 && b[0] == 0 && b[1] == '<':
		enc = unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM)
	}
	if enc == nil {
		return bytes.TrimPrefix(b, utf8BOM)
	}
	out, err := enc.NewDecoder().Bytes(b[:len(b)&^1])
	if err != nil {
		return nil
	}
	return out
}

// decodedCharset lets a document decoded to UTF-8 keep the declaration of
// the encoding it was written in.
func decodedCharset(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-16", "utf-16le", "utf-16be", "unicode", "utf-8", "utf8":
		return r, nil
	}
	return nil, fmt.Errorf("encoding %q: want UTF-16 or UTF-8", label)
}

// XML reads an XML job list by its root element: Quartz's job scheduling
// data (<job-scheduling-data>) goes to QuartzXML, a Windows Task Scheduler
// task (<Task>) to WinTask, after a UTF-8 or UTF-16 byte order mark. A
// document whose root cannot be read goes to QuartzXML, which says what is
// wrong with it; any other root is a file error.
//
// The zero value is ready to use.
type XML struct{}

var _ Converter = XML{}

// xmlSniffBytes is how much of a file is read to find its root element.
const xmlSniffBytes = 64 << 10

// Convert reads the XML file at path; see Converter.
func (XML) Convert(ctx context.Context, path string, opts Options, emit func(Row) error) error {
	return convertFile(ctx, path, opts, emit, XML{}.ConvertReader)
}

// ConvertReader reads an XML file from r as Convert does; file is the
// name used in errors.
func (XML) ConvertReader(ctx context.Context, file string, r io.Reader, opts Options, emit func(Row) error) error {
	br := bufio.NewReaderSize(r, xmlSniffBytes)
	head, _ := br.Peek(xmlSniffBytes)
	name, space, ok := xmlRoot(head)
	switch {
	case !ok || name == "job-scheduling-data":
		return QuartzXML{}.ConvertReader(ctx, file, br, opts, emit)
	case name == "Task" && (space == "" || space == WinTaskNamespace):
		return WinTask{}.ConvertReader(ctx, file, br, opts, emit)
	}
	return fmt.Errorf("%s: the root element is <%s> in namespace %q: want Quartz job scheduling data (<job-scheduling-data>) or a Windows Task Scheduler task (<Task> in %s)", file, name, space, WinTaskNamespace)
}

// xmlRoot finds the root element of the start of an XML document.
func xmlRoot(head []byte) (name, space string, ok bool) {
	dec := xml.NewDecoder(bytes.NewReader(decodeXMLBytes(head)))
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		if se, is := tok.(xml.StartElement); is {
			return se.Name.Local, se.Name.Space, true
		}
	}
}
