package cliflag

import (
	"errors"
	"flag"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The flag package's own values (IntVar, BoolVar, DurationVar...) fail with
// these texts alone; a value of redcell's own type says what it wants.
const (
	flagParseError = "parse error"
	flagRangeError = "value out of range"
)

// explain turns err, from setting f to value, into what f's value should
// look like when err is one of the flag package's bare errors; any other
// error is returned as it is.
func explain(f *flag.Flag, value string, err error) error {
	if err.Error() != flagParseError && err.Error() != flagRangeError {
		return err
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err
	}
	switch g.Get().(type) {
	case bool:
		return errors.New("must be true or false")
	case int, int64:
		if err.Error() == flagRangeError {
			return errors.New("a whole number out of range")
		}
		return errors.New("must be a whole number")
	case uint, uint64:
		if err.Error() == flagRangeError {
			return errors.New("a whole number out of range")
		}
		return errors.New("must be a whole number, not negative")
	case float64:
		return errors.New("must be a number")
	case time.Duration:
		return durationError(value)
	}
	return err
}

// wellFormed is a duration as time.ParseDuration reads one, which it refuses
// only when it overflows.
var wellFormed = regexp.MustCompile(`^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// durationError says what is wrong with value as a duration, which
// time.ParseDuration refused.
func durationError(value string) error {
	_, err := time.ParseDuration(value)
	if err == nil {
		return errors.New("a duration out of range")
	}
	if _, ferr := strconv.ParseFloat(strings.TrimSpace(value), 64); ferr == nil {
		return errors.New("a duration needs a unit, as 1s or 500ms")
	}
	if wellFormed.MatchString(value) {
		return errors.New("a duration out of range: at most " + time.Duration(1<<63-1).Truncate(time.Hour).String())
	}
	if _, rest, ok := strings.Cut(err.Error(), "unknown unit "); ok {
		if unit, qerr := strconv.QuotedPrefix(rest); qerr == nil {
			return errors.New("unknown unit " + unit + " in a duration: the units are ns, us, ms, s, m and h")
		}
	}
	return errors.New("a duration is a number and a unit, as 1s, 500ms or 1m30s")
}
