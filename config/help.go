package config

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"
)

// usage prints --help: a man page's summary, with every flag, its
// environment variable and its default.
func usage(fs *flag.FlagSet, w io.Writer) {
	b := bufio.NewWriter(w)
	defer b.Flush()
	fmt.Fprint(b, `NAME
    redcell - a Redis-protocol rate-limiting server, a drop-in for redis-cell

SYNOPSIS
    redcell [--bind addr] [--port n] [--dir path | --in-memory] [option ...]
    redcell --healthcheck [option ...]
    redcell cluster create host:port ... [--replicas n] [--sentinels list]
    redcell cluster add-node new-host:port existing-host:port [--replica-of id]
    redcell cluster del-node existing-host:port node-id
    redcell cluster reshard --from host:port --to host:port --slots list
    redcell --version | --help

DESCRIPTION
    redcell answers CL.THROTTLE key max_burst count period [quantity] with
    redis-cell's five integers (limited, limit, remaining, retry_after,
    reset_after), decided by GCRA, for any Redis client. State is kept in
    memory and flushed to a Pebble store under --dir every --flush-interval,
    on SAVE/BGSAVE, and on SIGTERM, SIGINT or SHUTDOWN; a restart loads it.

    Every option can also be set in the environment as REDCELL_<OPTION>,
    upper case with dashes as underscores: REDCELL_FLUSH_INTERVAL=5s. A flag
    on the command line wins over the environment, which wins over the
    default.

OPTIONS
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		head := "--" + f.Name
		if name != "" {
			head += " " + name
		}
		var notes []string
		if !actionFlags[f.Name] {
			notes = append(notes, envName(f.Name))
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			notes = append(notes, "default "+f.DefValue)
		}
		if len(notes) > 0 {
			head += "  (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(b, "    %s\n", head)
		for _, line := range wrap(text, 68) {
			fmt.Fprintf(b, "        %s\n", line)
		}
	})
	fmt.Fprint(b, `
SIGNALS
    SIGTERM, SIGINT  write every change to disk, then exit 0.

EXIT STATUS
    0 after a clean stop, 1 if serving failed (the log says why), 2 for a
    bad option. --healthcheck exits 0 when the server answers PONG, else 1.

EXAMPLES
    redcell --dir /var/lib/redcell --metrics-addr 127.0.0.1:9379
    REDCELL_REQUIREPASS=secret redcell --bind 0.0.0.0 --log-format json
    redis-cli CL.THROTTLE user123 15 30 60

SEE ALSO
    README.md and docs/ (configuration, Docker, clients, HTTP header mapping),
    redcell cluster --help (making a cluster of nodes, with Sentinels for
    its failovers; moving slots between its nodes),
    https://github.com/brandur/redis-cell
`)
}

// wrap splits text into lines of at most width bytes, at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
