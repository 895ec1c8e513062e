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
		if strings.Contains(f.Name, "Pass") || strings.Contains(f.Name, "Secret") || strings.Contains(f.Name, "Token") {
			val = !v.Field(i).IsZero()
		}
		attrs = append(attrs, slog.Any(snake(f.Name), val))
	}
	return attrs
}

// snake turns FlushInterval into flush_interval and TLSCertFile into
// tls_cert_file.
func snake(name string) string {
	var b strings.Builder
	upper := func(i int) bool { return i >= 0 && i < len(name) && 'A' <= name[i] && name[i] <= 'Z' }
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if upper(i) {
			if i > 0 && (!upper(i-1) || (i+1 < len(name) && !upper(i+1))) {
				b.WriteByte('_')
			}
			ch += 'a' - 'A'
		}
		b.WriteByte(ch)
	}
	return b.String()
}
