package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/redcell/redcell/engine"
)

// Security: the password, protected mode and the TLS files. The flags are
// registered by addSecurityFlags.

// readPassword reads --requirepass-file into RequirePass.
func (c *Config) readPassword() error {
	if c.RequirePassFile == "" {
		return nil
	}
	if c.RequirePass != "" {
		return errors.New("--requirepass and --requirepass-file (or REDCELL_REQUIREPASS and REDCELL_REQUIREPASS_FILE) are both set: choose one")
	}
	b, err := os.ReadFile(c.RequirePassFile)
	if err != nil {
		return fmt.Errorf("--requirepass-file: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) == 0 {
		return fmt.Errorf("--requirepass-file %s: the first line is empty", c.RequirePassFile)
	}
	c.RequirePass = string(line)
	return nil
}

// validateSecurity reports the first security or limit setting that cannot
// work, and refuses to listen beyond the loopback without a password while
// protected mode is on.
func (c Config) validateSecurity() error {
	switch {
	case c.MaxClients < 1:
		return fmt.Errorf("--maxclients %d: must be at least 1", c.MaxClients)
	case c.Timeout < 0:
		return fmt.Errorf("--timeout %v: must not be negative", c.Timeout)
	case c.ProtoMaxBulkLen < 1:
		return fmt.Errorf("--proto-max-bulk-len %d: must be at least 1", c.ProtoMaxBulkLen)
	case c.MaxArgs < 1:
		return fmt.Errorf("--max-args %d: must be at least 1", c.MaxArgs)
	case c.MaxInlineLen < 1:
		return fmt.Errorf("--max-inline-len %d: must be at least 1", c.MaxInlineLen)
	case c.QueryBufferLimit < c.ProtoMaxBulkLen:
		q, b := size(c.QueryBufferLimit), size(c.ProtoMaxBulkLen)
		return fmt.Errorf("--query-buffer-limit %s: must not be less than --proto-max-bulk-len %s", q.String(), b.String())
	case c.OutputBufferLimit < 0:
		return fmt.Errorf("--output-buffer-limit %d: must not be negative", c.OutputBufferLimit)
	case c.TLSPort < 0 || c.TLSPort > 65535:
		return fmt.Errorf("--tls-port %d: must be between 0 and 65535", c.TLSPort)
	case c.TLSPort != 0 && c.TLSPort == c.Port:
		return fmt.Errorf("--tls-port %d: the plain --port uses it", c.TLSPort)
	case c.TLSPort != 0 && (c.TLSCertFile == "" || c.TLSKeyFile == ""):
		return errors.New("--tls-port needs --tls-cert-file and --tls-key-file")
	case c.TLSPort == 0 && c.RLSAddr == "" && (c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TLSCACertFile != ""):
		return errors.New("--tls-cert-file, --tls-key-file and --tls-ca-cert-file need --tls-port or --rls-addr")
	case c.RLSAddr != "" && (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return errors.New("TLS for --rls-addr needs both --tls-cert-file and --tls-key-file")
	case c.TLSAuthClients != "yes" && c.TLSAuthClients != "no" && c.TLSAuthClients != "optional":
		return fmt.Errorf("--tls-auth-clients %q: must be yes, optional or no", c.TLSAuthClients)
	case c.TLSAuthClients == "optional" && c.TLSCACertFile == "":
		return errors.New("--tls-auth-clients optional needs --tls-ca-cert-file to check certificates against")
	}
	if c.ACLFile == "" {
		return c.CheckProtected(c.RequirePass == "")
	}
	return nil // its default user decides: CheckProtected once it is loaded
}

// CheckProtected refuses to listen beyond the loopback while protected
// mode is on and a client needs no password (defaultOpen: the default user
// is on and nopass), as Redis's protected mode refuses such clients. With
// --aclfile the daemon asks once the file is loaded. The server checks
// each connection besides (server.Config.ProtectedMode), which catches a
// password removed while it runs.
func (c Config) CheckProtected(defaultOpen bool) error {
	if !c.ProtectedMode || !defaultOpen || loopback(c.Bind) {
		return nil
	}
	how := "Set one with --requirepass-file <file> or REDCELL_REQUIREPASS"
	if c.ACLFile != "" {
		how = "Give the default user of --aclfile " + c.ACLFile + " one (user default on >password ...), or set --requirepass and leave it out of the file"
	}
	return fmt.Errorf("--bind %s: protected mode refuses to listen on an address other than the loopback "+
		"without a password. %s; or, only where the network is trusted, start with --protected-mode no", c.Bind, how)
}

// loopback reports whether bind reaches this host only. An address that is
// not an IP is taken as not loopback, except "localhost".
func loopback(bind string) bool {
	if strings.EqualFold(bind, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(bind, "[]"))
	return ip != nil && ip.IsLoopback()
}

// secretFlags are the flags whose values are secrets: passwords. A file's
// path (--requirepass-file, --tls-key-file) is not one, nor is a user's
// name. The xDS stream's headers may carry a token. TestSecretFlagsAreKnown keeps the list whole.
var secretFlags = []string{"requirepass", "masterauth", "cluster-auth-pass", "rls-xds-headers"}

// Redacted stands for a secret's value in RedactArgs.
const Redacted = "REDACTED"

// RedactArgs returns a copy of a command line (os.Args) with the value of
// every secret flag replaced by Redacted, in every form Parse accepts:
// --name value and --name=value, with one dash or two. The value after
// --name is taken whatever it looks like, as Parse takes it.
func RedactArgs(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		arg := out[i]
		if len(arg) < 2 || arg[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(arg[1:], "-"), "=")
		switch {
		case !slices.Contains(secretFlags, name):
		case hasValue:
			out[i] = arg[:strings.IndexByte(arg, '=')+1] + Redacted
		case i+1 < len(out):
			i++
			out[i] = Redacted
		}
	}
	return out
}

// TLSFiles are the TLS flags as the server takes them.
func (c Config) TLSFiles() engine.TLSFiles {
	return engine.TLSFiles{CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile, CAFile: c.TLSCACertFile, AuthClients: c.TLSAuthClients}
}
