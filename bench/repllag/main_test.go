package main

import (
	"testing"
)

func TestSummarize(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 down to 1: summarize sorts
	}
	for i, tc := range []struct {
		in   []float64
		want stats
	}{
		{nil, stats{}},
		{[]float64{7}, stats{7, 7, 7}},
		{[]float64{3, 1, 2}, stats{2, 3, 3}},
		{[]float64{1, 2, 3, 4}, stats{2, 4, 4}},
		{hundred, stats{50, 99, 100}},
	} {
		if got := summarize(tc.in); got != tc.want {
			t.Errorf("case %d: summarize(%v) = %+v want %+v", i, tc.in, got, tc.want)
		}
	}
}

func TestByteLag(t *testing.T) {
	for i, tc := range []struct {
		m1, r, m2 int64
		want      float64
	}{
		{100, 100, 100, 0},
		{100, 40, 200, 110},
		{100, 150, 100, 0}, // the replica read ahead of both: never negative
		{0, 0, 0, 0},
	} {
		if got := byteLag(tc.m1, tc.r, tc.m2); got != tc.want {
			t.Errorf("case %d: byteLag(%d, %d, %d) = %v want %v", i, tc.m1, tc.r, tc.m2, got, tc.want)
		}
	}
}

func TestInfoField(t *testing.T) {
	info := "# Replication\r\nrole:slave\r\nmaster_link_status:up\r\nslave_repl_offset:4242\r\n" +
		"slave_read_repl_offset:4243\r\nmaster_repl_offset:4242\r\n"
	for _, tc := range []struct{ field, want string }{
		{"role", "slave"},
		{"master_link_status", "up"},
		{"slave_repl_offset", "4242"},
		{"slave_read_repl_offset", "4243"},
		{"master_repl_offset", "4242"},
	} {
		if got, ok := infoField(info, tc.field); !ok || got != tc.want {
			t.Errorf("infoField(%s) = %q, %v want %q, true", tc.field, got, ok, tc.want)
		}
	}
	if got, ok := infoField(info, "repl_offset"); ok {
		t.Errorf("infoField(repl_offset) = %q, true: a suffix of a field is no field", got)
	}
}
