package clusteradmin

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Redis Sentinel, as the operator's commands talk to it: each shard's
// master is registered under a name of its own, and redcell's nodes match
// what Sentinel reports to the topology by address, so the names are free
// (<prefix>-<n>).

// sentinelEntry is one master a Sentinel monitors, or one of its
// replicas: SENTINEL MASTERS's and REPLICAS's fields.
type sentinelEntry map[string]string

func (e sentinelEntry) addr() string { return net.JoinHostPort(e["ip"], e["port"]) }

// flagged reports whether the entry's flags hold any of flags.
func (e sentinelEntry) flagged(flags ...string) bool {
	for _, f := range strings.Split(e["flags"], ",") {
		if slices.Contains(flags, f) {
			return true
		}
	}
	return false
}

// sentinelEntries reads SENTINEL MASTERS's or REPLICAS's reply: a list of
// flat lists of names and values.
func sentinelEntries(v any) ([]sentinelEntry, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("answered %v, not a list", v)
	}
	var out []sentinelEntry
	for _, e := range list {
		a, ok := e.([]any)
		if !ok || len(a)%2 != 0 {
			return nil, fmt.Errorf("an entry %v, not a list of names and values", e)
		}
		f := sentinelEntry{}
		for i := 0; i < len(a); i += 2 {
			k, _ := a[i].(string)
			v, _ := a[i+1].(string)
			f[k] = v
		}
		out = append(out, f)
	}
	return out, nil
}

// sentinelCall sends a SENTINEL subcommand and reads entries back.
func sentinelCall(s *session, addr string, args ...string) ([]sentinelEntry, error) {
	v, err := s.call(addr, "Sentinel "+addr, append([]string{"SENTINEL"}, args...)...)
	if err != nil {
		return nil, err
	}
	es, err := sentinelEntries(v)
	if err != nil {
		return nil, &NodeError{Node: "Sentinel " + addr, Command: "SENTINEL " + strings.Join(args, " "), Err: err}
	}
	return es, nil
}

// surveySentinels asks each Sentinel which masters it monitors, and
// refuses one that monitors a shard's name at an address not of that
// shard, or one of the shards' nodes under another name. It returns each
// Sentinel's names of the shards it monitors already, with their
// addresses.
func surveySentinels(s *session, addrs []string, shards []Shard, names []string) (map[string]map[string]string, error) {
	shardOf := map[string]int{} // node address -> shard
	for i, sh := range shards {
		for _, m := range append([]Member{sh.Master}, sh.Replicas...) {
			shardOf[m.Addr()] = i
		}
	}
	out := map[string]map[string]string{}
	for _, addr := range addrs {
		masters, err := sentinelCall(s, addr, "MASTERS")
		if err != nil {
			return nil, err
		}
		out[addr] = map[string]string{}
		for _, m := range masters {
			name, at := m["name"], m.addr()
			if k := slices.Index(names, name); k >= 0 {
				if i, ok := shardOf[at]; !ok || i != k {
					return nil, fmt.Errorf("Sentinel %s monitors %s at %s, which is not a node of that shard (%s): "+
						"remove it there (SENTINEL REMOVE %s) or give another --sentinel-prefix", addr, name, at, shardAddrs(shards[k]), name)
				}
				out[addr][name] = at
				continue
			}
			if i, ok := shardOf[at]; ok {
				return nil, fmt.Errorf("Sentinel %s monitors %s, a node of shard %s, as %s: "+
					"remove it there (SENTINEL REMOVE %s), as one Sentinel name a shard is what the nodes follow", addr, at, names[i], name, name)
			}
		}
	}
	return out, nil
}

// shardAddrs lists a shard's nodes' addresses.
func shardAddrs(sh Shard) string {
	addrs := []string{sh.Master.Addr()}
	for _, r := range sh.Replicas {
		addrs = append(addrs, r.Addr())
	}
	return strings.Join(addrs, ", ")
}

// waitSentinels waits until every Sentinel sees each shard's replicas
// (SENTINEL REPLICAS, none down or disconnected) and the other Sentinels
// (SENTINEL SENTINELS): then a quorum can find a master down and elect a
// leader to promote one of them.
func waitSentinels(s *session, addrs, names []string, shards []Shard, current []Member, deadline time.Time) error {
	for {
		err := sentinelsReady(s, addrs, names, shards, current)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Sentinels do not see the whole cluster yet: %w", err)
		}
		time.Sleep(pollInterval)
	}
}

func sentinelsReady(s *session, addrs, names []string, shards []Shard, current []Member) error {
	for _, addr := range addrs {
		for i, name := range names {
			replicas, err := sentinelCall(s, addr, "REPLICAS", name)
			if err != nil {
				return err
			}
			up := map[string]bool{}
			for _, r := range replicas {
				if !r.flagged("s_down", "o_down", "disconnected") {
					up[r.addr()] = true
				}
			}
			for _, m := range append([]Member{shards[i].Master}, shards[i].Replicas...) {
				if m.ID != current[i].ID && !up[m.Addr()] {
					return fmt.Errorf("Sentinel %s does not see %s, a replica of %s, up", addr, m.Addr(), name)
				}
			}
			others, err := sentinelCall(s, addr, "SENTINELS", name)
			if err != nil {
				return err
			}
			if len(others) < len(addrs)-1 {
				return fmt.Errorf("Sentinel %s knows %d other Sentinels for %s, not %d", addr, len(others), name, len(addrs)-1)
			}
		}
	}
	return nil
}

// sentinelAddrsFlag reads --sentinels: host:port, comma-separated.
func sentinelAddrsFlag(v string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(v, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("--sentinels %q: an empty item", v)
		}
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("--sentinels: %q: want host:port, comma-separated", a)
		}
		if slices.Contains(out, a) {
			return nil, fmt.Errorf("--sentinels: %s is given twice", a)
		}
		out = append(out, a)
	}
	return out, nil
}
