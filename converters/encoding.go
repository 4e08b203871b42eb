package converters

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// encodings are the text encodings a folder may name (CSVOptions.Encoding).
// nil stands for UTF-8, which is read as is.
var encodings = map[string]encoding.Encoding{
	"":             nil,
	"utf-8":        nil,
	"utf8":         nil,
	"utf-16":       unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM),
	"utf16":        unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM),
	"utf-16le":     unicode.UTF16(unicode.LittleEndian, unicode.UseBOM),
	"utf-16be":     unicode.UTF16(unicode.BigEndian, unicode.UseBOM),
	"windows-1252": charmap.Windows1252,
	"cp1252":       charmap.Windows1252,
}

// lookupEncoding finds an encoding by name, ignoring case.
func lookupEncoding(name string) (encoding.Encoding, error) {
	e, ok := encodings[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return nil, fmt.Errorf("%q: want utf-8, utf-16, utf-16le, utf-16be or windows-1252", name)
	}
	return e, nil
}

// decodeText returns r as UTF-8 without a byte order mark: decoded from
// the named encoding, or, when name is empty, from UTF-16 if r starts with
// a UTF-16 byte order mark and as UTF-8 otherwise.
func decodeText(r io.Reader, name string) (*bufio.Reader, error) {
	enc, err := lookupEncoding(name)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if strings.TrimSpace(name) == "" {
		b, _ := br.Peek(2)
		if bytes.Equal(b, []byte{0xFF, 0xFE}) || bytes.Equal(b, []byte{0xFE, 0xFF}) {
			enc = unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM)
		}
	}
	if enc != nil {
		br = bufio.NewReaderSize(transform.NewReader(br, enc.NewDecoder()), 64<<10)
	}
	if b, _ := br.Peek(len(utf8BOM)); bytes.Equal(b, utf8BOM) {
		_, _ = br.Discard(len(utf8BOM))
	}
	return br, nil
}
