package config

import (
	"flag"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/redcell/redcell/internal/cliflag"
)

// A Warning is a setting that was accepted but is likely a mistake: a
// REDCELL_ variable that sets nothing, a flag that the others make unused.
// The start logs each (daemon.Run); it never stops the start.
type Warning struct {
	// Setting is the variable or flag, as the user wrote it: REDCELL_PROT,
	// --dir.
	Setting string
	// Text is the whole warning, a sentence that begins with Setting.
	Text string
}

// Warnings are the warnings of the Parse or ParseEnviron that returned c,
// in the order of the environment, then of the flags.
func (c Config) Warnings() []Warning { return c.warnings }

// ParseEnviron is Parse over environ, a list of "NAME=value" as
// os.Environ returns it, which also warns (Warnings) of every REDCELL_
// variable that sets nothing, such as a misspelled REDCELL_PROT, naming the
// variable meant when one is near.
func ParseEnviron(args, environ []string, stderr io.Writer) (Config, error) {
	vars := make(map[string]string, len(environ))
	var names []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if _, seen := vars[name]; !seen {
			names = append(names, name)
		}
		vars[name] = value
	}
	cfg, err := Parse(args, func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}, stderr)
	if err != nil {
		return cfg, err
	}
	sort.Strings(names)
	cfg.warnings = append(unknownVariables(names), cfg.warnings...)
	return cfg, nil
}

// notSettings are REDCELL_ variables that set nothing and are no mistake:
// the build's (the compose files' REDCELL_COMMIT). The tests' variables
// have a prefix of their own, REDCELLTEST_ (the root package's harness runs
// the test binary as the server with REDCELLTEST_CHILD and the rest in its
// environment), which is no setting's.
var notSettings = map[string]bool{"REDCELL_COMMIT": true}

// unknownVariables warns of each of names that begins with EnvPrefix and is
// neither a flag's variable nor one of notSettings. The actions' variables
// (REDCELL_VERSION) are known: the environment ignores them by design.
func unknownVariables(names []string) []Warning {
	known := map[string]bool{}
	var settings []string
	flagSet(&Config{}).VisitAll(func(f *flag.Flag) {
		known[envName(f.Name)] = true
		if !actionFlags[f.Name] {
			settings = append(settings, strings.TrimPrefix(envName(f.Name), EnvPrefix))
		}
	})
	var warnings []Warning
	for _, name := range names {
		if !strings.HasPrefix(name, EnvPrefix) || known[name] || notSettings[name] {
			continue
		}
		text := name + " is not a redcell setting and is ignored"
		if near, ok := cliflag.Nearest(strings.TrimPrefix(name, EnvPrefix), settings); ok {
			text += "; did you mean " + EnvPrefix + near + "?"
		}
		warnings = append(warnings, Warning{Setting: name, Text: text})
	}
	return warnings
}

// diskSettings are the settings --in-memory leaves unused, as it writes
// nothing to disk: each a flag and its aliases, the one whose variable wins
// in the environment last (REDCELL_DIR over REDCELL_DATA_DIR).
var diskSettings = [][]string{{"data-dir", "dir"}, {"disk-reserve"}, {"flush-interval"}}

// unusedInMemory warns of each of diskSettings set, by the flag given last
// (given, as cliflag.Parse returns it) or else the variable that won, when
// --in-memory makes it unused: "--dir ./x is ignored: ...". Refusing the
// start instead would refuse the Docker image's REDCELL_DIR=/data with
// --in-memory after the image name.
func unusedInMemory(fs *flag.FlagSet, given []string, lookup func(string) (string, bool)) []Warning {
	var warnings []Warning
	const why = " is ignored: --in-memory keeps no state on disk"
	for _, names := range diskSettings {
		if name, ok := lastOf(given, names); ok {
			setting := "--" + name
			warnings = append(warnings, Warning{Setting: setting, Text: setting + " " + fs.Lookup(name).Value.String() + why})
			continue
		}
		for i := len(names) - 1; i >= 0; i-- {
			if v, ok := lookup(envName(names[i])); ok {
				setting := envName(names[i])
				warnings = append(warnings, Warning{Setting: setting, Text: setting + "=" + v + why})
				break
			}
		}
	}
	return warnings
}

// lastOf returns the last of given that is one of names.
func lastOf(given, names []string) (string, bool) {
	for i := len(given) - 1; i >= 0; i-- {
		if slices.Contains(names, given[i]) {
			return given[i], true
		}
	}
	return "", false
}
