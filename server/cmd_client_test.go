package server

import "testing"

func TestValidClientName(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"", true}, // clears the name
		{"app-1", true},
		{"a!~z", true},
		{"two words", false},
		{"tab\there", false},
		{"new\nline", false},
		{"caf\xc3\xa9", false}, // non-ASCII
		{"\x7f", false},
	} {
		if got := validClientName([]byte(c.name)); got != c.want {
			t.Errorf("validClientName(%q) = %v want %v", c.name, got, c.want)
		}
	}
}
