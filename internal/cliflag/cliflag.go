// Package cliflag reads redcell's command lines (the server's, `redcell
// cluster`'s and the bench tools') with a flag.FlagSet as the registry of
// flags, and words its errors as redcell's users write flags: --dir, as
// --help and docs/configuration.md document them, where the flag package says -dir
// (and -c for a one-letter flag); with the nearest flag suggested for one
// that does not exist.
package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Parse sets the flags that args name and returns their names, in the
// order given, and the arguments after them. It accepts what fs.Parse
// accepts: --name value, --name=value, one dash or two, a boolean flag
// without a value (true), and "--" ending the flags. -h and --help return
// flag.ErrHelp. Unlike fs.Parse it prints nothing, whatever fs's output,
// and fs.Parsed stays false; unlike fs.Visit, given leaves out what was set
// before (the environment's variables).
func Parse(fs *flag.FlagSet, args []string) (given, rest []string, err error) {
	for len(args) > 0 {
		arg := args[0]
		if arg == "--" {
			return given, args[1:], nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			return given, args, nil
		}
		args = args[1:]
		name := strings.TrimPrefix(arg[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return nil, nil, fmt.Errorf("bad flag syntax: %s", arg)
		}
		name, value, hasValue := strings.Cut(name, "=")
		f := fs.Lookup(name)
		if f == nil {
			if name == "help" || name == "h" {
				return nil, nil, flag.ErrHelp
			}
			return nil, nil, unknown(fs, name)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() && !hasValue {
			value, hasValue = "true", true
		}
		if !hasValue {
			if len(args) == 0 {
				return nil, nil, fmt.Errorf("%s needs a value", dashed(name))
			}
			value, args = args[0], args[1:]
		}
		if err := Set(fs, name, value); err != nil {
			return nil, nil, fmt.Errorf("invalid value %q for %s: %w", value, dashed(name), err)
		}
		given = append(given, name)
	}
	return given, nil, nil
}

// Set is fs.Set(name, value) for a flag fs has, with the flag package's
// bare "parse error" and "value out of range" of its own flag types turned
// into what the value should look like, for a caller (the environment's
// REDCELL_* variables) to name where the value came from.
func Set(fs *flag.FlagSet, name, value string) error {
	err := fs.Set(name, value)
	if err == nil {
		return nil
	}
	if f := fs.Lookup(name); f != nil {
		return explain(f, value, err)
	}
	return err
}

// unknown is the error for a flag fs does not have, suggesting the nearest
// one when one is near.
func unknown(fs *flag.FlagSet, name string) error {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if near, ok := Nearest(name, names); ok {
		return fmt.Errorf("unknown flag %s: did you mean %s?", dashed(name), dashed(near))
	}
	return errors.New("unknown flag " + dashed(name))
}

// dashed is a flag's name as its users write it: with two dashes (--dir),
// or one for a one-letter flag (-c, -P), as redis-benchmark's and getopt's
// are written.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
