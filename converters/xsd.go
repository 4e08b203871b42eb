package converters

import (
	"errors"
	"time"
)

// checkBool checks an xsd:boolean.
func checkBool(v string) error {
	switch v {
	case "true", "false", "1", "0":
		return nil
	}
	return errors.New("want true or false")
}

// parseXSDDateTime reads an xsd:dateTime (2027-03-01T08:00:00, with
// optional fraction and Z or ±hh:mm); without an offset it is a local time
// in loc.
func parseXSDDateTime(s string, loc *time.Location) (int64, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	if err != nil {
		return 0, errors.New("want an xsd:dateTime such as 2027-03-01T08:00:00 or 2027-03-01T08:00:00+01:00")
	}
	if t.Year() < 1970 {
		return 0, errors.New("must be after 1970")
	}
	return t.UnixMilli(), nil
}
