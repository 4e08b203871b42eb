package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// consoleUsers are the accounts of the access tests; every password is
// the user's name backwards.
func consoleUsers(t *testing.T) []string {
	t.Helper()
	var env []string
	for i, u := range []struct{ name, role string }{{"vera", "viewer"}, {"otto", "operator"}, {"ada", "admin"}} {
		h, err := bcrypt.GenerateFromPassword([]byte(reverse(u.name)), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		p := "JOBDROP_CONSOLE_USERS_" + string(rune('0'+i)) + "_"
		env = append(env, p+"NAME="+u.name, p+"PASSWORD_HASH="+string(h), p+"ROLE="+u.role)
	}
	return env
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// call sends a request as user (none: anonymous) and returns the status
// and body. header holds name, value pairs; the pair "body", value
// replaces the body.
func (in *instance) call(method, path, user, body string, header ...string) (int, string) {
	in.t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "body" {
			body = header[i+1]
		}
	}
	req, err := http.NewRequest(method, in.console+path, strings.NewReader(body))
	if err != nil {
		in.t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, reverse(user))
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] != "body" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		in.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func jsonInt(n int64) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(n)
	return strings.TrimSpace(b.String())
}
