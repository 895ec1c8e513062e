package server

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseInt(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"-0", 0},
		{"5", 5},
		{"-5", -5},
		{"007", 7},
		{"-007", -7},
		{"000000000000000000000000000042", 42}, // leading zeros do not overflow
		{"999999999999999999", 999999999999999999}, // the most digits parseInt's fast path takes
		{"1000000000000000000", 1000000000000000000},
		{"9223372036854775807", math.MaxInt64},
		{"-9223372036854775808", math.MinInt64},
		{"09223372036854775807", math.MaxInt64},
	} {
		got, ok := parseInt([]byte(c.in))
		if !ok || got != c.want {
			t.Errorf("parseInt(%q) = %d, %v want %d, true", c.in, got, ok, c.want)
		}
	}
	for _, in := range []string{
		"", "-", "--5", "+5", "+0", " 5", "5 ", "5.0", "5e3", "0x10", "1_000", "abc", "5a", "a5",
		"\x005", "٥", // an Arabic-Indic five
		"9223372036854775808", "-9223372036854775809", "99999999999999999999", "18446744073709551616",
		strings.Repeat("9", 100),
	} {
		if got, ok := parseInt([]byte(in)); ok {
			t.Errorf("parseInt(%q) = %d, true want rejected", in, got)
		}
	}
}

// parseInt agrees with strconv.ParseInt on every input without a '+' (which
// strconv accepts and redcell's numbers may not carry: docs/commands.md, "Differences
// from redis-cell").
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-5", "007", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "-", "", "+5", " 5", "5.0", "00000000000000000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseInt([]byte(s))
		if strings.Contains(s, "+") {
			if ok {
				t.Fatalf("parseInt(%q) = %d, true: '+' must be rejected", s, got)
			}
			return
		}
		want, err := strconv.ParseInt(s, 10, 64)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("parseInt(%q) = %d, %v; strconv.ParseInt = %d, %v", s, got, ok, want, err)
		}
	})
}

func TestEqualFold(t *testing.T) {
	for _, c := range []struct {
		b, lower string
		want     bool
	}{
		{"CL.THROTTLE", "cl.throttle", true},
		{"Cl.ThRoTtLe", "cl.throttle", true},
		{"cl.throttle", "cl.throttle", true},
		{"cl.throttl", "cl.throttle", false},
		{"cl.throttlex", "cl.throttle", false},
		{"", "", true},
		{"@", "`", false}, // 0x40 is not the upper case of 0x60
		{"[", "{", false},
	} {
		if got := equalFold([]byte(c.b), c.lower); got != c.want {
			t.Errorf("equalFold(%q, %q) = %v want %v", c.b, c.lower, got, c.want)
		}
	}
}

func BenchmarkParseInt(b *testing.B) {
	b.ReportAllocs()
	in := []byte("-1234567890123")
	for b.Loop() {
		parseInt(in)
	}
}

// parseFloat takes what Redis's strtod-based parser takes, and refuses
// what it refuses.
func TestParseFloat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0.5", 0.5, true},
		{"60", 60, true},
		{"+1.5", 1.5, true},
		{"-2", -2, true},
		{".25", 0.25, true},
		{"5.", 5, true},
		{"1e3", 1000, true},
		{"0x10", 16, true}, // strtod's hexadecimal, without an exponent
		{"0x1p-1", 0.5, true},
		{"inf", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"0", 0, true},
		{"0e-400", 0, true},
		{"4.9e-324", 5e-324, true},
		{"", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1_0", 0, false},
		{"nan", 0, false},
		{"NaN", 0, false},
		{"1e400", 0, false},  // overflow: strtod's ERANGE
		{"1e-400", 0, false}, // underflow to zero, as strtod's ERANGE
		{"0x1p-2000", 0, false},
		{"1e", 0, false},
		{"abc", 0, false},
		{"0.0000000000000000000000000000000000000000000000000000000000000000000001", 1e-70, true},
	} {
		got, ok := parseFloat([]byte(c.in))
		if ok != c.ok || ok && got != c.want {
			t.Errorf("parseFloat(%q) = %v, %v want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseFloat([]byte("0.25")) }); n != 0 {
		t.Errorf("parseFloat allocates %v times", n)
	}
}

// parseFloat agrees with strconv.ParseFloat wherever the two grammars meet
// (no digit underscores, no hexadecimal without an exponent), and never
// returns NaN or a zero from digits that are not all zero.
func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"0.5", "1e12", "-0", "inf", "nan", "0x1p-3", "0x10", "1e-400", " 1", "1_000", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseFloat([]byte(s))
		if !ok {
			return
		}
		if math.IsNaN(got) || strings.Contains(s, "_") || strings.TrimSpace(s) != s {
			t.Fatalf("parseFloat(%q) = %v, true", s, got)
		}
		lower := strings.ToLower(s)
		if strings.Contains(lower, "0x") && !strings.Contains(lower, "p") {
			return // strtod's hexadecimal without an exponent: strconv refuses it
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || want != got {
			t.Fatalf("parseFloat(%q) = %v; strconv.ParseFloat = %v, %v", s, got, want, err)
		}
	})
}
