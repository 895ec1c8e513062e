package config

import (
	"log/slog"
	"reflect"
	"strings"
)

// LogAttrs lists c for the start-up log line, one attribute a field in
// snake case (FlushInterval is flush_interval), with passwords replaced by
// whether they are set and the actions (--version, --healthcheck) left out.
func (c Config) LogAttrs() []any {
	var attrs []any
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || actionFlags[strings.ToLower(f.Name)] || f.Name == "HealthCheck" {
			continue
		}
		val := v.Field(i).Interface()
		if strings.Contains(f.Name, "Pass") || strings.Contains(f.Name, "Secret") || strings.Contains(f.Name, "Token") ||
			strings.HasSuffix(f.Name, "Headers") { // --rls-xds-headers may carry a token
			val = !v.Field(i).IsZero()
		}
		attrs = append(attrs, slog.Any(snake(f.Name), val))
	}
	return attrs
}

// snake turns FlushInterval into flush_interval and TLSCertFile into
// tls_cert_file: a word begins at each capital that follows a small letter
// or precedes one, so a run of capitals is one word (TLS). Where two
// initialisms meet nothing in the case tells them apart: a run that is
// initialisms run together splits into them, so TLSCACertFile is
// tls_ca_cert_file.
func snake(name string) string {
	var words []string
	for _, w := range camelWords(name) {
		if parts := splitInitialisms(w); parts != nil {
			words = append(words, parts...)
		} else {
			words = append(words, w)
		}
	}
	return strings.ToLower(strings.Join(words, "_"))
}

// camelWords splits name where a word begins: at each capital that follows
// a small letter or precedes one.
func camelWords(name string) []string {
	upper := func(i int) bool { return 'A' <= name[i] && name[i] <= 'Z' }
	var words []string
	start := 0
	for i := 1; i < len(name); i++ {
		if upper(i) && (!upper(i-1) || i+1 < len(name) && !upper(i+1)) {
			words = append(words, name[start:i])
			start = i
		}
	}
	return append(words, name[start:])
}

// initialisms are the abbreviations Config's field names hold. One that
// meets another in a name (TLS and CA in TLSCACertFile) must be here for
// snake to split them: TestEveryFieldsLogNameSplitsItsInitialisms fails
// for a field whose run of capitals it cannot split.
var initialisms = []string{"TLS", "CA", "IP", "RLS", "ACL", "XDS", "ID"}

// splitInitialisms splits w into the initialisms it is made of (TLSCA into
// TLS and CA), or returns nil if it is not made of them.
func splitInitialisms(w string) []string {
	if w == "" {
		return []string{}
	}
	for _, in := range initialisms {
		if rest, ok := strings.CutPrefix(w, in); ok {
			if parts := splitInitialisms(rest); parts != nil {
				return append([]string{in}, parts...)
			}
		}
	}
	return nil
}
