package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/jobdrop/jobdrop/task"
	"github.com/jobdrop/jobdrop/web/auth"
)

// Each user picks how the console shows times: in UTC (the default), in
// the browser's own zone, or in each task's zone (UTC for what belongs to
// no task, or to a task without one). The choice is kept in a cookie of
// that user's, so it holds across pages, visits and restarts, and two
// users of one browser keep their own. Times are RFC 3339 whatever the
// zone, with its offset, so that people and programs read them alike.

// Ways to show times.
const (
	zoneUTC   = "utc"
	zoneLocal = "local"
	zoneTask  = "task"
)

// displayZone is how a request's user sees times.
type displayZone struct {
	// Mode is zoneUTC, zoneLocal or zoneTask.
	Mode string
	// Local is the browser's zone, for zoneLocal: its IANA name and
	// location.
	Local    string
	localLoc *time.Location
}

type displayZoneKey struct{}

// zoneOf is the display zone of a request's context; UTC when none.
func zoneOf(ctx context.Context) displayZone {
	z, ok := ctx.Value(displayZoneKey{}).(displayZone)
	if !ok {
		return displayZone{Mode: zoneUTC}
	}
	return z
}

// in is where a time of a task in zone taskZone ("" for none, or for a
// time of no task) shows.
func (z displayZone) in(taskZone string) *time.Location {
	switch z.Mode {
	case zoneLocal:
		if z.localLoc != nil {
			return z.localLoc
		}
	case zoneTask:
		if loc := task.Location(taskZone); loc != nil {
			return loc
		}
	}
	return time.UTC
}

// Label says, for people, how times show: "UTC", "Europe/Paris (this
// browser's zone)", "each task's zone (UTC for the rest)".
func (z displayZone) Label() string {
	switch {
	case z.Mode == zoneLocal && z.localLoc != nil:
		return z.Local + " (this browser's zone)"
	case z.Mode == zoneTask:
		return "each task's own zone (UTC where it has none)"
	}
	return "UTC"
}

// zoneCookie names the cookie of user's choice: each user of a browser
// has one.
func zoneCookie(user string) string {
	h := sha256.Sum256([]byte(user))
	return "jobdrop_tz_" + hex.EncodeToString(h[:6])
}

// readZone reads the user's choice from the request; UTC when there is
// none or it makes no sense.
func readZone(r *http.Request, user string) displayZone {
	c, err := r.Cookie(zoneCookie(user))
	if err != nil {
		return displayZone{Mode: zoneUTC}
	}
	return parseZone(c.Value)
}

// parseZone reads a choice as the cookie keeps it: "utc", "task" or
// "local:" and the browser's zone.
func parseZone(v string) displayZone {
	mode, name, _ := strings.Cut(v, ":")
	switch mode {
	case zoneTask:
		return displayZone{Mode: zoneTask}
	case zoneLocal:
		if loc := task.Location(name); loc != nil {
			return displayZone{Mode: zoneLocal, Local: name, localLoc: loc}
		}
	}
	return displayZone{Mode: zoneUTC}
}

// value is z as its cookie keeps it.
func (z displayZone) value() string {
	if z.Mode == zoneLocal {
		return zoneLocal + ":" + z.Local
	}
	return z.Mode
}

// withZone puts the request's display zone in its context.
func withZone(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), displayZoneKey{}, readZone(r, auth.Who(r.Context()).Name)))
}

// zoneYear is how long the choice is kept.
const zoneYear = 365 * 24 * time.Hour

// setZone serves POST /settings/timezone: tz is utc, local or task; zone
// is the browser's IANA zone, which the page's script fills in, for
// local. It keeps the choice and goes back to the page it came from.
func (s *Server) setZone(w http.ResponseWriter, r *http.Request) {
	z := parseZone(r.FormValue("tz"))
	if r.FormValue("tz") == zoneLocal {
		z = parseZone(zoneLocal + ":" + r.FormValue("zone"))
	}
	http.SetCookie(w, &http.Cookie{Name: zoneCookie(auth.Who(r.Context()).Name), Value: z.value(), Path: "/",
		MaxAge: int(zoneYear / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.cfg.SecureCookies})
	http.Redirect(w, r, auth.SafeNext(r.FormValue("back")), http.StatusSeeOther)
}

// shown writes t in the display zone of ctx, for a task in zone taskZone
// ("" for none): RFC 3339 with the zone's offset ("Z" for UTC).
func shown(ctx context.Context, t time.Time, taskZone string) string {
	return t.In(zoneOf(ctx).in(taskZone)).Format(time.RFC3339)
}

// zoneTitle names the zone a time of a task in taskZone shows in, for a
// tooltip, with the time in UTC when it is another.
func zoneTitle(ctx context.Context, t time.Time, taskZone string) string {
	loc := zoneOf(ctx).in(taskZone)
	if loc == time.UTC {
		return "UTC"
	}
	return loc.String() + "; " + utc(t)
}
