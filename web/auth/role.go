package auth

import (
	"context"
	"fmt"
)

// Role says what a user may do.
type Role int

// The roles, each allowed what the one before is and more.
const (
	// Viewer reads every page and the API.
	Viewer Role = iota + 1
	// Operator also pauses, resumes, triggers and deletes tasks, dry-runs
	// files, rejects held files and reports execution status.
	Operator
	// Admin also creates and replaces task definitions: see DefineRole.
	Admin
)

// DefineRole is the one role that creates and replaces task definitions,
// whichever way they arrive: POST /schedulers, an uploaded file, a held
// file applied. A file dropped into a watched folder is trusted as the
// folder's owner is.
const DefineRole = Admin

// ParseRole reads "viewer", "operator" or "admin".
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return Viewer, nil
	case "operator":
		return Operator, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("role %q: want viewer, operator or admin", s)
}

// String is the role's name as configured.
func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	}
	return "none"
}

// User is one local account.
type User struct {
	Name string
	// PasswordHash is the bcrypt hash of the password.
	PasswordHash string
	Role         Role
}

// Principal is who makes a request.
type Principal struct {
	Name string
	Role Role
}

type principalKey struct{}

// WithPrincipal is ctx of a request that p makes.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// Who returns the principal of an authenticated request; the zero
// Principal (no name, no role) of any other.
func Who(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}
