package auth

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"golang.org/x/crypto/bcrypt"
)

func TestSafeNextKeepsRedirectsOnTheSite(t *testing.T) {
	for _, tc := range []struct{ name, next, want string }{
		{"path", "/tasks?status=active", "/tasks?status=active"},
		{"empty", "", "/"},
		{"other host", "//evil.example/", "/"},
		{"full URL", "https://evil.example/", "/"},
		{"tab", "/\t/evil.example", "/"},
		{"backslash", "/\\evil.example", "/"},
		{"relative", "tasks", "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SafeNext(tc.next); got != tc.want {
				t.Errorf("SafeNext(%q) = %q, want %q", tc.next, got, tc.want)
			}
		})
	}
}

func TestParseRoleReadsWhatStringWrites(t *testing.T) {
	for _, r := range []Role{Viewer, Operator, Admin} {
		if got, err := ParseRole(r.String()); err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v", r.String(), got, err)
		}
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error("ParseRole(root): no error")
	}
}

func TestWrongPasswordsSlowTheNameDown(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("right"), bcrypt.MinCost)
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a, err := New(Config{Users: []User{{Name: "ada", PasswordHash: string(hash), Role: Admin}}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var failures []Failure
	for range namePolicy.free {
		if _, err := a.CheckPassword(context.Background(), "ada", "wrong", "192.0.2.1", func(f Failure) { failures = append(failures, f) }); !errors.Is(err, ErrWrongPassword) {
			t.Fatalf("wrong password: %v", err)
		}
	}
	if len(failures) != namePolicy.free+1 || !failures[len(failures)-1].Throttled {
		t.Fatalf("failures %+v: want %d refusals and the name slowed down", failures, namePolicy.free)
	}
	var th *ThrottledError
	if _, err := a.CheckPassword(context.Background(), "ada", "right", "192.0.2.1", nil); !errors.As(err, &th) {
		t.Fatalf("right password at once after the free failures: %v, want throttled", err)
	}
	clock.Advance(th.Wait)
	u, err := a.CheckPassword(context.Background(), "ada", "right", "192.0.2.1", nil)
	if err != nil || u.Name != "ada" {
		t.Fatalf("right password after the wait: %v, %v", u, err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(a.StartSession("ada"))
	if p, ok := a.Session(r); !ok || p != (Principal{Name: "ada", Role: Admin}) {
		t.Errorf("session: %v, %v", p, ok)
	}
}
