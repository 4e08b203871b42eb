package record

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\u2028\xff", "\"\\\x01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
