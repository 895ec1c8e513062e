// Package clusteradmin is `redcell cluster ...`: an operator's commands for
// a cluster of redcell nodes, sent to the nodes over RESP. Its one command
// so far, reshard, moves slots from one master to another with their keys'
// exact state (CLUSTERX MIGRATE) and pushes each slot's new owner to every
// node (CLUSTERX SETSLOT), as kvrocks's controller does for kvrocks.
package clusteradmin

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"redcell/internal/cliflag"
)

const usageText = `NAME
    redcell cluster - operate a cluster of redcell nodes

SYNOPSIS
    redcell cluster reshard --from host:port --to host:port --slots list
                            [--password p] [--timeout d]
    redcell cluster --help

DESCRIPTION
    reshard moves slots from the master at --from to the master at --to,
    one slot at a time, while clients keep being served. It reads the
    topology from --from (CLUSTER NODES, CLUSTERX VERSION) and refuses to
    start unless every node of it, master or replica, answers the same
    version under the ID the topology gives it. Then, for each slot:

      1. CLUSTERX MIGRATE slot to-id SYNC on --from: the slot's keys are
         copied with their exact state while it is served, then frozen for
         a last copy (clients are answered TRYAGAIN for that moment), then
         clients are sent ASK to --to;
      2. CLUSTERX SETSLOT slot NODE to-id version+1 on --to, then on
         --from (which then answers MOVED and drops its copy), then on
         every other node.

    It prints a line a slot: the keys it held (CLUSTER COUNTKEYSINSLOT
    before the move), the time the move took, and how many slots are done.
    A slot --to serves already is skipped, so that a reshard interrupted
    can be run again; a slot another node serves is refused. An error
    names the node and the command that failed; the slots moved before it
    stay moved.

OPTIONS
    --from host:port   the master the slots move from
    --to host:port     the master the slots move to
    --slots list       slots and ranges, comma-separated: 0-100,200
    --password p       AUTH password of every node (default: none)
    --timeout d        the longest one command may take, a slot's whole
                       migration included (default 1m)

EXIT STATUS
    0 once every slot moved, 1 if one could not, 2 for a bad option.

EXAMPLES
    redcell cluster reshard --from 10.0.0.1:6379 --to 10.0.0.2:6379 \
        --slots 0-1023,5000
`

// Main runs `redcell cluster args...` and returns the process's exit
// status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return 0
	case "reshard":
		return reshardMain(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "redcell cluster: unknown command %q\nTry 'redcell cluster --help'.\n", args[0])
	return 2
}

func reshardMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseReshard(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "redcell cluster reshard:", err)
		fmt.Fprintln(stderr, "Try 'redcell cluster --help'.")
		return 2
	}
	o.Out = stdout
	if err := Reshard(o); err != nil {
		fmt.Fprintln(stderr, "redcell cluster reshard:", err)
		return 1
	}
	return 0
}

// parseReshard reads reshard's flags.
func parseReshard(args []string) (ReshardOptions, error) {
	var o ReshardOptions
	var slots string
	fs := flag.NewFlagSet("reshard", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.From, "from", "", "")
	fs.StringVar(&o.To, "to", "", "")
	fs.StringVar(&slots, "slots", "", "")
	fs.StringVar(&o.Password, "password", "", "")
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "")
	_, rest, err := cliflag.Parse(fs, args)
	if err != nil {
		return o, err
	}
	switch {
	case len(rest) > 0:
		return o, fmt.Errorf("unexpected argument %q", rest[0])
	case o.From == "":
		return o, errors.New("--from host:port is required")
	case o.To == "":
		return o, errors.New("--to host:port is required")
	case slots == "":
		return o, errors.New("--slots is required")
	case o.Timeout <= 0:
		return o, fmt.Errorf("--timeout %v: must be positive", o.Timeout)
	}
	o.Slots, err = ParseSlots(slots)
	return o, err
}
