package config

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// The flag types for Redis's spellings of a setting.

// yesNo is a bool flag spelled yes or no, as Redis's settings are.
type yesNo bool

func (v *yesNo) String() string {
	if v != nil && *v {
		return "yes"
	}
	return "no"
}

func (v *yesNo) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes":
		*v = true
	case "no":
		*v = false
	default:
		return errors.New("must be yes or no")
	}
	return nil
}

// size is a byte count written as Redis writes memory settings: 1024, 1k
// (1000), 1kb (1024), 1m, 1mb, 1g, 1gb, in either case.
type size int64

var sizeUnits = []struct {
	suffix string
	mul    int64
}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}}

func (v *size) String() string {
	if v == nil {
		return "0"
	}
	n := int64(*v)
	for _, u := range sizeUnits[:3] {
		if n != 0 && n%u.mul == 0 {
			return strconv.FormatInt(n/u.mul, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (v *size) Set(s string) error {
	text, mul := strings.ToLower(strings.TrimSpace(s)), int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(text, u.suffix) {
			text, mul = strings.TrimSuffix(text, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return errors.New("must be a number of bytes, optionally with a unit: 64kb, 1mb, 1gb")
	}
	*v = size(n * mul)
	return nil
}

// seconds is a duration written as Redis's timeout, in whole seconds, or
// as a Go duration.
type seconds time.Duration

func (v *seconds) String() string {
	if v == nil || *v == 0 {
		return "0"
	}
	d := time.Duration(*v)
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return d.String()
}

func (v *seconds) Set(s string) error {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 && n <= int64(time.Duration(1<<62)/time.Second) {
		*v = seconds(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return errors.New("must be whole seconds or a duration such as 90s or 5m")
	}
	*v = seconds(d)
	return nil
}
