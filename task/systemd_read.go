package task

import (
	"fmt"
	"strconv"
	"strings"
)

// systemdReader reads an expression left to right.
type systemdReader struct {
	s string
	i int
}

func (r *systemdReader) peek() byte {
	if r.i < len(r.s) {
		return r.s[r.i]
	}
	return 0
}

func (r *systemdReader) skipSpaces() {
	for r.peek() == ' ' {
		r.i++
	}
}

var systemdDayNames = []struct {
	name string
	day  int // 0 is Monday
}{
	{"monday", 0}, {"mon", 0}, {"tuesday", 1}, {"tue", 1}, {"wednesday", 2}, {"wed", 2},
	{"thursday", 3}, {"thu", 3}, {"friday", 4}, {"fri", 4}, {"saturday", 5}, {"sat", 5},
	{"sunday", 6}, {"sun", 6},
}

// weekdays reads the optional weekday list: names (three letters or in
// full, any case), lists with ",", ranges with ".." (or "-"), a trailing
// comma allowed. It returns the weekdays as bits, Monday first.
func (r *systemdReader) weekdays() (int, error) {
	bitsOut, from := 0, -1
	for first := true; ; first = false {
		rest := strings.ToLower(r.s[r.i:])
		found := -1
		for _, d := range systemdDayNames {
			if strings.HasPrefix(rest, d.name) {
				if next := byte(0); len(rest) > len(d.name) {
					next = rest[len(d.name)]
					if !strings.ContainsRune("-., ", rune(next)) {
						return 0, fmt.Errorf("weekday %q: want Mon, Tue, Wed, Thu, Fri, Sat or Sun (or in full), with .. for a range and , for a list", r.s[r.i:r.i+len(d.name)+1])
					}
				}
				found = d.day
				r.i += len(d.name)
				break
			}
		}
		if found < 0 {
			if first {
				return 0, nil // no weekdays: the date follows
			}
			return 0, fmt.Errorf("%q after the weekdays: want a weekday name", r.s[r.i:])
		}
		bitsOut |= 1 << found
		if from >= 0 {
			if from > found {
				return 0, fmt.Errorf("weekday range ends before it starts: write it Monday first, as Mon..Sun")
			}
			for d := from + 1; d < found; d++ {
				bitsOut |= 1 << d
			}
		}
		switch r.peek() {
		case 0:
			return bitsOut, nil
		case ' ':
			r.skipSpaces()
			return bitsOut, nil
		case '.':
			if from >= 0 || r.i+1 >= len(r.s) || r.s[r.i+1] != '.' {
				return 0, fmt.Errorf("weekdays: a range is written Mon..Fri")
			}
			from = found
			r.i += 2
		case '-':
			if from >= 0 {
				return 0, fmt.Errorf("weekdays: a range is written Mon..Fri")
			}
			from = found
			r.i++
		case ',':
			from = -1
			r.i++
		}
		if c := r.peek(); c == 0 || c == ' ' {
			r.skipSpaces()
			if from >= 0 {
				return 0, fmt.Errorf("weekdays: the range has no end")
			}
			return bitsOut, nil
		}
	}
}

// timestamp reads "@SECONDS", a single point in time.
func (r *systemdReader) timestamp() (int64, bool, error) {
	if r.peek() != '@' {
		return 0, false, nil
	}
	j := r.i + 1
	for j < len(r.s) && r.s[j] >= '0' && r.s[j] <= '9' {
		j++
	}
	v, err := strconv.ParseInt(r.s[r.i+1:j], 10, 64)
	if err != nil || v > 253402300799 {
		return 0, false, fmt.Errorf("%q: want @ and seconds since 1970", r.s[r.i:j])
	}
	r.i = j
	return v, true, nil
}

// date reads [year-]month-day with "~" for days counted from the end of
// the month; no date (the expression starts with the time) is every day.
func (r *systemdReader) date() (year, month, day systemdField, endOfMonth bool, err error) {
	if r.peek() == 0 {
		return nil, nil, nil, false, nil
	}
	save := r.i
	first, err := r.field(false)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if c := r.peek(); c == 0 || c == ':' {
		r.i = save // a time, not a date
		return nil, nil, nil, false, nil
	}
	sep := func() error {
		switch r.peek() {
		case '~':
			endOfMonth = true
		case '-':
		default:
			return fmt.Errorf("%q: the date is [year-]month-day, its parts separated by - (or ~ before days counted from the end of the month)", r.s[save:])
		}
		r.i++
		return nil
	}
	if err := sep(); err != nil {
		return nil, nil, nil, false, err
	}
	second, err := r.field(false)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if c := r.peek(); c == 0 || c == ' ' {
		r.skipSpaces()
		return nil, first, second, endOfMonth, nil
	}
	if endOfMonth {
		return nil, nil, nil, false, fmt.Errorf("%q: ~ comes only between the month and the day", r.s[save:])
	}
	if err := sep(); err != nil {
		return nil, nil, nil, false, err
	}
	third, err := r.field(false)
	if err != nil {
		return nil, nil, nil, false, err
	}
	if c := r.peek(); c != 0 && c != ' ' {
		return nil, nil, nil, false, fmt.Errorf("%q after the date: want a space, then the time", r.s[r.i:])
	}
	r.skipSpaces()
	return first, second, third, endOfMonth, nil
}

// clock reads hour:minute[:second]; no time is midnight.
func (r *systemdReader) clock() (hour, minute, second systemdField, err error) {
	zero := func() systemdField { return systemdField{{0, -1, 0}} }
	if r.peek() == 0 {
		return zero(), zero(), zero(), nil
	}
	if hour, err = r.field(false); err != nil {
		return nil, nil, nil, err
	}
	if r.peek() != ':' {
		return nil, nil, nil, fmt.Errorf("%q: the time is hour:minute[:second]", r.s[r.i:])
	}
	r.i++
	if minute, err = r.field(false); err != nil {
		return nil, nil, nil, err
	}
	if r.peek() == 0 {
		return hour, minute, zero(), nil
	}
	if r.peek() != ':' {
		return nil, nil, nil, fmt.Errorf("%q: the time is hour:minute[:second]", r.s[r.i:])
	}
	r.i++
	if second, err = r.field(true); err != nil {
		return nil, nil, nil, err
	}
	return hour, minute, second, nil
}

// field reads "*" or a comma list of components.
func (r *systemdReader) field(seconds bool) (systemdField, error) {
	if r.peek() == '*' {
		r.i++
		return nil, nil
	}
	var f systemdField
	for {
		if len(f) >= 240 {
			return nil, fmt.Errorf("more than 240 items in one field")
		}
		c := systemdComponent{stop: -1}
		var err error
		if c.start, err = r.number(seconds); err != nil {
			return nil, err
		}
		if strings.HasPrefix(r.s[r.i:], "..") {
			r.i += 2
			if c.stop, err = r.number(seconds); err != nil {
				return nil, err
			}
			c.repeat = 1
		}
		if r.peek() == '/' {
			r.i++
			if c.repeat, err = r.number(seconds); err != nil {
				return nil, err
			}
			if c.repeat == 0 {
				return nil, fmt.Errorf("repetition /0: want a step of 1 or more")
			}
		} else if seconds && c.stop >= 0 && c.stop <= c.start {
			// systemd refuses a range of seconds without a repetition
			// unless it reaches a second further (*:*:33..33), though it
			// takes 33..33 as a minute.
			return nil, fmt.Errorf("the second range %d..%d must end after it starts", c.start, c.stop)
		}
		if !strings.ContainsRune("\x00 ,-~:", rune(r.peek())) {
			return nil, fmt.Errorf("%q: %s", r.s[r.i:], systemdSyntax)
		}
		f = append(f, c)
		if r.peek() != ',' {
			return f, nil
		}
		r.i++
	}
}

// number reads a decimal; seconds may have a fraction, which must be zero:
// jobdrop fires on whole seconds.
func (r *systemdReader) number(seconds bool) (int, error) {
	j := r.i
	for j < len(r.s) && r.s[j] >= '0' && r.s[j] <= '9' {
		j++
	}
	if j == r.i {
		rest := r.s[r.i:]
		if rest == "" {
			return 0, fmt.Errorf("ends early: %s", systemdSyntax)
		}
		return 0, fmt.Errorf("%q: want a number: %s", rest, systemdSyntax)
	}
	v, err := strconv.Atoi(r.s[r.i:j])
	if err != nil || v > 1<<30 {
		return 0, fmt.Errorf("%q is too large", r.s[r.i:j])
	}
	r.i = j
	if seconds && r.peek() == '.' && (r.i+1 >= len(r.s) || r.s[r.i+1] != '.') {
		j = r.i + 1
		for j < len(r.s) && r.s[j] >= '0' && r.s[j] <= '9' {
			j++
		}
		if strings.Trim(r.s[r.i+1:j], "0") != "" {
			return 0, fmt.Errorf("second %q has a fraction: jobdrop fires on whole seconds", r.s[r.i-len(strconv.Itoa(v)):j])
		}
		r.i = j
	}
	return v, nil
}
