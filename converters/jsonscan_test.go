package converters

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"testing"
)

var scanSeeds = []string{
	`{}`, ` { } `, `{"host":"acme","name":"job-1","action":"INSERT","frequency":{"timeUnit":"MINUTES","time":1},"topic":"t","start":null,"data":{"command":"/opt/x.sh"}}`,
	`{"a":1,"a":2}`, `{"a":-0.5e+10,"b":true,"c":false,"d":null,"e":[1,[2,{}],"x"],"f":{"g":{"h":[]}}}`,
	`{"a":"\u00e9\n\"\\"}`, `{"\u0061":1}`, `{"é":"é"}`, `{"a":"\xff"}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`,
	`{"a":tru}`, `{"a":"x"`, `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":1} x`, `{"a":1}{}`, `[1]`, `"x"`, `{"a":"\x01"}`,
	`{"a":"\q"}`, `{"a":"\u12g4"}`, `{"a":[1,]}`, `{"a":{"b"}}`, `{"a":-}`, `{"a":--1}`, `{"a":1E+2,"b":0,"c":-0}`,
	`{"data":{"team":"ops","retries":3,"on":true}}`, `{"data":{}}`, `{"data":{"a":null}}`, `{"data":{"a":{"b":1}}}`,
}

func checkScan(t *testing.T, text []byte) {
	fast, ok := scanObject(text, nil)
	slow, err := decodeLine(bytes.TrimSpace(text))
	// Read with the string of its text, the object has the same fields,
	// each with its value's text.
	strung, sok := scanObjectString(string(text), nil)
	if sok != ok || len(strung) != len(fast) {
		t.Fatalf("scanObjectString(%q): %d fields, ok %v; scanObject %d, ok %v", text, len(strung), sok, len(fast), ok)
	}
	for i := range strung {
		if strung[i].name != fast[i].name || strung[i].text != string(fast[i].value) {
			t.Fatalf("scanObjectString(%q): field %d is %q=%s, scanObject %q=%s", text, i, strung[i].name, strung[i].text, fast[i].name, fast[i].value)
		}
	}
	if !ok {
		return // read by encoding/json
	}
	if err != nil {
		t.Fatalf("scanObject(%q) accepted what encoding/json refuses: %v", text, err)
	}
	if len(fast) != len(slow) {
		t.Fatalf("scanObject(%q): %d fields, encoding/json %d", text, len(fast), len(slow))
	}
	for i := range fast {
		if fast[i].name != slow[i].name || !bytes.Equal(bytes.TrimSpace(fast[i].value), bytes.TrimSpace(slow[i].value)) {
			t.Fatalf("scanObject(%q): field %d is %q=%s, encoding/json %q=%s", text, i, fast[i].name, fast[i].value, slow[i].name, slow[i].value)
		}
		if s, ok := plainString(fast[i].value, ""); ok {
			var want string
			if err := json.Unmarshal(fast[i].value, &want); err != nil || s != want {
				t.Fatalf("plainString(%s) = %q, encoding/json %q (%v)", fast[i].value, s, want, err)
			}
		}
	}
	if m, ok := parseFlatData(string(text), nil); ok {
		want, err := parseDataSlow(string(text))
		if err != nil || !maps.Equal(m, want) {
			t.Fatalf("parseFlatData(%q) = %v, encoding/json %v (%v)", text, m, want, err)
		}
	}
}

// parseDataSlow is parseData without its fast path.
func parseDataSlow(s string) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range m {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool:
			if v {
				out[k] = "true"
			} else {
				out[k] = "false"
			}
		default:
			return nil, errors.New("not flat")
		}
	}
	return out, nil
}

func TestScanObjectAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range scanSeeds {
		checkScan(t, []byte(s))
	}
	if _, ok := scanObject([]byte(scanSeeds[2]), nil); !ok {
		t.Error("a light-scheduler TaskDefinition is not read by scanObject")
	}
	if m, ok := parseFlatData(`{"team":"ops","retries":3,"on":true}`, nil); !ok || len(m) != 3 {
		t.Errorf("parseFlatData of a flat object: %v %v", m, ok)
	}
}

func FuzzScanObject(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) { checkScan(t, text) })
}
