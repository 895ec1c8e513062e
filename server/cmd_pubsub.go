package server

import (
	"slices"
	"time"
)

// Pub/Sub's commands, as Redis 7 answers them; the registry and how
// messages reach subscribers are in pubsub.go. Each (un)subscription is
// answered by an array of three, "subscribe" channel count (count: the
// client's channels and patterns), a push under RESP3. A client subscribed
// under RESP2 may only run the inSubscribed commands (client.gate) and its
// PING answers an array; under RESP3 it may run anything.

// pubsubFamily is Pub/Sub's commands, with Redis 7.2's flags, for the
// command table (commands.go). SUBSCRIBE and PSUBSCRIBE start a feed, so
// they run off the event loops; the others need not.
func pubsubFamily() []*command {
	subFlags := []string{"pubsub", "noscript", "loading", "stale"}
	subACL := []string{"@pubsub", "@slow"}
	return []*command{
		{name: "subscribe", arity: -2, offLoop: true, inSubscribed: true, flags: subFlags, acl: subACL,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of channels to subscribe to.", summary: "Listens for messages published to channels.", run: cmdSubscribe},
		{name: "unsubscribe", arity: -1, inSubscribed: true, flags: subFlags, acl: subACL,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of channels to unsubscribe.", summary: "Stops listening to messages posted to channels.", run: cmdUnsubscribe},
		{name: "psubscribe", arity: -2, offLoop: true, inSubscribed: true, flags: subFlags, acl: subACL,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of patterns to subscribe to.", summary: "Listens for messages published to channels that match one or more patterns.", run: cmdPsubscribe},
		{name: "punsubscribe", arity: -1, inSubscribed: true, flags: subFlags, acl: subACL,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of patterns to unsubscribe.", summary: "Stops listening to messages published to channels that match one or more patterns.", run: cmdPunsubscribe},
		{name: "publish", arity: 3, mayReplicate: true, flags: []string{"pubsub", "loading", "stale", "fast"}, acl: []string{"@pubsub", "@fast"},
			group: "pubsub", since: "2.0.0", complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", summary: "Posts a message to a channel.", run: cmdPublish},
		{name: "pubsub", arity: -2, flags: []string{}, acl: []string{"@slow"},
			group: "pubsub", since: "2.8.0", complexity: "Depends on subcommand.", summary: "A container for Pub/Sub commands.",
			subcommands: pubsubSubcommands()},
	}
}

func pubsubSubcommands() []*command {
	flags, acl := []string{"pubsub", "loading", "stale"}, []string{"@pubsub", "@slow"}
	help := helpSubcommand("pubsub", "6.2.0", pubsubHelp)
	help.group = "pubsub"
	return []*command{
		{name: "pubsub|channels", arity: -2, flags: flags, acl: acl, group: "pubsub", since: "2.8.0",
			complexity: "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
			summary:    "Returns the active channels.", run: cmdPubsubChannels},
		{name: "pubsub|numsub", arity: -2, flags: flags, acl: acl, group: "pubsub", since: "2.8.0",
			complexity: "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
			summary:    "Returns a count of subscribers to channels.", run: cmdPubsubNumsub},
		{name: "pubsub|numpat", arity: 2, flags: flags, acl: acl, group: "pubsub", since: "2.8.0",
			complexity: "O(1)", summary: "Returns a count of unique pattern subscriptions.", run: cmdPubsubNumpat},
		help,
	}
}

// SUBSCRIBE channel [channel ...]
func cmdSubscribe(c *client, args [][]byte, _ time.Time) { c.subscribe("SUBSCRIBE", args[1:], false) }

// PSUBSCRIBE pattern [pattern ...]
func cmdPsubscribe(c *client, args [][]byte, _ time.Time) {
	c.subscribe("PSUBSCRIBE", args[1:], true)
}

// UNSUBSCRIBE [channel ...]
func cmdUnsubscribe(c *client, args [][]byte, _ time.Time) { c.unsubscribe(args[1:], false) }

// PUNSUBSCRIBE [pattern ...]
func cmdPunsubscribe(c *client, args [][]byte, _ time.Time) { c.unsubscribe(args[1:], true) }

// subscribe subscribes the client to names, channels or patterns, answering
// each. Its feed holds what is published to it until these replies are
// sent, so that no message comes before the confirmation of its channel.
func (c *client) subscribe(command string, names [][]byte, pattern bool) {
	f := c.startFeed()
	if f == nil {
		c.writeError(errNoNetwork(command))
		return
	}
	f.hold()
	kind := "subscribe"
	if pattern {
		kind = "psubscribe"
	}
	ps := &c.srv.pubsub
	ps.mu.Lock()
	for _, name := range names {
		ps.add(c, string(name), pattern)
		c.writeSubscription(kind, name)
	}
	ps.mu.Unlock()
	c.regate()
}

// unsubscribe unsubscribes the client from names, or from all its channels
// or patterns if none are named, answering each; with none to name, one
// reply with a null name, as Redis's.
func (c *client) unsubscribe(names [][]byte, pattern bool) {
	kind := "unsubscribe"
	if pattern {
		kind = "punsubscribe"
	}
	if len(names) == 0 {
		names = c.subscriptionNames(pattern)
		if len(names) == 0 {
			c.writeSubscription(kind, nil)
			return
		}
	}
	if c.subscriptions() == 0 {
		for _, name := range names {
			c.writeSubscription(kind, name)
		}
		return
	}
	ps := &c.srv.pubsub
	ps.mu.Lock()
	for _, name := range names {
		ps.remove(c, string(name), pattern)
		c.writeSubscription(kind, name)
	}
	ps.mu.Unlock()
	c.regate()
}

// writeSubscription writes one (un)subscription reply: kind, the channel or
// pattern (nil: a null), and the client's count of subscriptions after it.
func (c *client) writeSubscription(kind string, name []byte) {
	c.writePush(3)
	c.writeBulkString(kind)
	if name == nil {
		c.writeNull()
	} else {
		c.writeBulk(name)
	}
	c.writeInt(int64(c.subscriptions()))
}

// PUBLISH channel message
//
// Answers how many subscriptions it reached (publish). A message to the
// publisher itself follows this reply, or EXEC's inside a transaction.
func cmdPublish(c *client, args [][]byte, _ time.Time) {
	c.writeInt(c.srv.publish(c, args[1], args[2]))
	if !c.inExec() {
		c.sendSelfPushes()
	}
}

// PUBSUB CHANNELS [pattern]
//
// The channels with a subscriber, in byte order (Redis's: its hash
// table's), those that match pattern if given.
func cmdPubsubChannels(c *client, args [][]byte, _ time.Time) {
	if len(args) > 3 {
		c.writeError(errSubcommandSyntax(args[1], "PUBSUB"))
		return
	}
	ps := &c.srv.pubsub
	ps.mu.RLock()
	names := make([]string, 0, len(ps.channels))
	for name := range ps.channels {
		if len(args) == 2 || globMatch(args[2], name) {
			names = append(names, name)
		}
	}
	ps.mu.RUnlock()
	slices.Sort(names)
	c.writeArray(len(names))
	for _, name := range names {
		c.writeBulkString(name)
	}
}

// PUBSUB NUMSUB [channel ...]
//
// Each channel and its count of subscribers, patterns not counted, in one
// flat array under either protocol, as Redis's.
func cmdPubsubNumsub(c *client, args [][]byte, _ time.Time) {
	ps := &c.srv.pubsub
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	c.writeArray(2 * (len(args) - 2))
	for _, name := range args[2:] {
		c.writeBulk(name)
		c.writeInt(int64(len(ps.channels[string(name)])))
	}
}

// PUBSUB NUMPAT
//
// The count of patterns with a subscriber.
func cmdPubsubNumpat(c *client, _ [][]byte, _ time.Time) {
	_, patterns, _ := c.srv.pubsubCounts()
	c.writeInt(int64(patterns))
}

// pubsubHelp is Redis 7's PUBSUB HELP, without the subcommands redcell does
// not serve (SHARDCHANNELS, SHARDNUMSUB).
var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"HELP",
	"    Print this help.",
}
