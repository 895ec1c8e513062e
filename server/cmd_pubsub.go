package server

import (
	"slices"
	"time"

	"github.com/redcell/redcell/acl"
	"github.com/redcell/redcell/internal/glob"
)

// Pub/Sub's commands, as Redis 7 answers them; the registry and how
// messages reach subscribers are pubsub's. Each (un)subscription is
// answered by an array of three, "subscribe" channel count (count: the
// client's channels and patterns), a push under RESP3. A client subscribed
// under RESP2 may only run the inSubscribed commands (client.gate) and its
// PING answers an array; under RESP3 it may run anything.

// pubsubFamily is Pub/Sub's commands, with Redis 7.2's flags, for the
// command table (newCommandTable). SUBSCRIBE and PSUBSCRIBE start an outbox, so
// they run off the event loops; the others need not.
func pubsubFamily() []*command {
	subFlags := []string{"pubsub", "noscript", "loading", "stale"}
	subACL := []string{"@pubsub", "@slow"}
	return []*command{
		{name: "subscribe", arity: -2, offLoop: true, inSubscribed: true, flags: subFlags, acl: subACL, channels: acl.SubscribeChannels,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of channels to subscribe to.", summary: "Listens for messages published to channels.", run: cmdSubscribe},
		{name: "unsubscribe", arity: -1, inSubscribed: true, flags: subFlags, acl: subACL,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of channels to unsubscribe.", summary: "Stops listening to messages posted to channels.", run: cmdUnsubscribe},
		{name: "psubscribe", arity: -2, offLoop: true, inSubscribed: true, flags: subFlags, acl: subACL, channels: acl.SubscribePatterns,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of patterns to subscribe to.", summary: "Listens for messages published to channels that match one or more patterns.", run: cmdPsubscribe},
		{name: "punsubscribe", arity: -1, inSubscribed: true, flags: subFlags, acl: subACL,
			group: "pubsub", since: "2.0.0", complexity: "O(N) where N is the number of patterns to unsubscribe.", summary: "Stops listening to messages published to channels that match one or more patterns.", run: cmdPunsubscribe},
		{name: "publish", arity: 3, mayReplicate: true, flags: []string{"pubsub", "loading", "stale", "fast"}, acl: []string{"@pubsub", "@fast"}, channels: acl.PublishChannel,
			group: "pubsub", since: "2.0.0", complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", summary: "Posts a message to a channel.", run: cmdPublish},
		// Sharded Pub/Sub: the channel is a key (not_key: no key is read),
		// so that in a cluster it is routed to its slot's node, as Redis's.
		{name: "ssubscribe", arity: -2, offLoop: true, inSubscribed: true, flags: subFlags, acl: subACL, channels: acl.SubscribeChannels,
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"not_key"},
			group: "pubsub", since: "7.0.0", complexity: "O(N) where N is the number of shard channels to subscribe to.", summary: "Listens for messages published to shard channels.", run: cmdSsubscribe},
		{name: "sunsubscribe", arity: -1, inSubscribed: true, flags: subFlags, acl: subACL,
			firstKey: 1, lastKey: -1, step: 1, keyFlags: []string{"not_key"},
			group: "pubsub", since: "7.0.0", complexity: "O(N) where N is the number of shard channels to unsubscribe.", summary: "Stops listening to messages posted to shard channels.", run: cmdSunsubscribe},
		{name: "spublish", arity: 3, mayReplicate: true, flags: []string{"pubsub", "loading", "stale", "fast"}, acl: []string{"@pubsub", "@fast"}, channels: acl.PublishChannel,
			firstKey: 1, lastKey: 1, step: 1, keyFlags: []string{"not_key"},
			group: "pubsub", since: "7.0.0", complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.", summary: "Post a message to a shard channel", run: cmdSpublish},
		{name: "pubsub", arity: -2, flags: []string{}, acl: []string{"@slow"},
			group: "pubsub", since: "2.8.0", complexity: "Depends on subcommand.", summary: "A container for Pub/Sub commands.",
			subcommands: pubsubSubcommands()},
	}
}

func pubsubSubcommands() []*command {
	help := helpSubcommand("pubsub", "6.2.0", pubsubHelp)
	help.group = "pubsub"
	return []*command{
		pubsubSubcommand("channels", -2, "2.8.0", "Returns the active channels.",
			"O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
			cmdPubsubChannels),
		pubsubSubcommand("numsub", -2, "2.8.0", "Returns a count of subscribers to channels.",
			"O(N) for the NUMSUB subcommand, where N is the number of requested channels", cmdPubsubNumsub),
		pubsubSubcommand("numpat", 2, "2.8.0", "Returns a count of unique pattern subscriptions.", "O(1)", cmdPubsubNumpat),
		pubsubSubcommand("shardchannels", -2, "7.0.0", "Returns the active shard channels.",
			"O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
			cmdPubsubShardchannels),
		pubsubSubcommand("shardnumsub", -2, "7.0.0", "Returns the count of subscribers of shard channels.",
			"O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", cmdPubsubShardnumsub),
		help,
	}
}

// pubsubSubcommand is a PUBSUB subcommand, with Redis 7.2's flags.
func pubsubSubcommand(name string, arity int, since, summary, complexity string, run func(*client, [][]byte, time.Time)) *command {
	return &command{name: "pubsub|" + name, arity: arity, flags: []string{"pubsub", "loading", "stale"},
		acl: []string{"@pubsub", "@slow"}, group: "pubsub", since: since, complexity: complexity, summary: summary, run: run}
}

// SUBSCRIBE channel [channel ...]
func cmdSubscribe(c *client, args [][]byte, _ time.Time) {
	c.subscribe("SUBSCRIBE", args[1:], subChannel)
}

// PSUBSCRIBE pattern [pattern ...]
func cmdPsubscribe(c *client, args [][]byte, _ time.Time) {
	c.subscribe("PSUBSCRIBE", args[1:], subPattern)
}

// SSUBSCRIBE shardchannel [shardchannel ...]
//
// In a cluster the channels must share a slot this node serves (route).
func cmdSsubscribe(c *client, args [][]byte, _ time.Time) {
	c.subscribe("SSUBSCRIBE", args[1:], subShard)
}

// UNSUBSCRIBE [channel ...]
func cmdUnsubscribe(c *client, args [][]byte, _ time.Time) { c.unsubscribe(args[1:], subChannel) }

// PUNSUBSCRIBE [pattern ...]
func cmdPunsubscribe(c *client, args [][]byte, _ time.Time) { c.unsubscribe(args[1:], subPattern) }

// SUNSUBSCRIBE [shardchannel ...]
func cmdSunsubscribe(c *client, args [][]byte, _ time.Time) { c.unsubscribe(args[1:], subShard) }

// subscriptionReplies are the kinds' (un)subscription replies.
var subscriptionReplies = [subKinds][2]string{
	subChannel: {"subscribe", "unsubscribe"},
	subPattern: {"psubscribe", "punsubscribe"},
	subShard:   {"ssubscribe", "sunsubscribe"},
}

// subscribe subscribes the client to names of kind, answering each. Its
// outbox holds what is published to it until these replies are sent, so that
// no message comes before the confirmation of its channel.
func (c *client) subscribe(command string, names [][]byte, kind subKind) {
	f := c.startOutbox()
	if f == nil {
		c.writeError(errNoNetwork(command))
		return
	}
	f.Hold()
	ps := &c.srv.pubsub
	ps.mu.Lock()
	for _, name := range names {
		ps.add(c, string(name), kind)
		c.writeSubscription(subscriptionReplies[kind][0], name, kind)
	}
	ps.mu.Unlock()
	c.regate()
}

// unsubscribe unsubscribes the client from names of kind, or from all its
// names of that kind if none are named, answering each; with none to name,
// one reply with a null name, as Redis's.
func (c *client) unsubscribe(names [][]byte, kind subKind) {
	reply := subscriptionReplies[kind][1]
	if len(names) == 0 {
		names = c.subscriptionNames(kind)
		if len(names) == 0 {
			c.writeSubscription(reply, nil, kind)
			return
		}
	}
	if c.subscriptions() == 0 {
		for _, name := range names {
			c.writeSubscription(reply, name, kind)
		}
		return
	}
	ps := &c.srv.pubsub
	ps.mu.Lock()
	for _, name := range names {
		ps.remove(c, string(name), kind)
		c.writeSubscription(reply, name, kind)
	}
	ps.mu.Unlock()
	c.regate()
}

// writeSubscription writes one (un)subscription reply: what it is, the
// name (nil: a null), and the client's count of subscriptions of its kind
// after it.
func (c *client) writeSubscription(reply string, name []byte, kind subKind) {
	c.writePush(3)
	c.writeBulkString(reply)
	if name == nil {
		c.writeNull()
	} else {
		c.writeBulk(name)
	}
	c.writeInt(int64(c.subscriptionCount(kind)))
}

// PUBLISH channel message
//
// Answers how many subscriptions it reached (publish). A message to the
// publisher itself follows this reply, or EXEC's inside a transaction.
func cmdPublish(c *client, args [][]byte, _ time.Time) { c.publish(args[1], args[2], subChannel) }

// SPUBLISH shardchannel message
//
// PUBLISH to a shard channel's subscribers (not to patterns); in a cluster
// it runs on the node serving the channel's slot (route).
func cmdSpublish(c *client, args [][]byte, _ time.Time) { c.publish(args[1], args[2], subShard) }

func (c *client) publish(channel, message []byte, kind subKind) {
	c.writeInt(c.srv.publish(c, channel, message, kind))
	if !c.inExec() {
		c.sendSelfPushes()
	}
}

// PUBSUB CHANNELS [pattern]
//
// The channels with a subscriber, in byte order (Redis's: its hash
// table's), those that match pattern if given.
func cmdPubsubChannels(c *client, args [][]byte, _ time.Time) { c.pubsubChannels(args, subChannel) }

// PUBSUB SHARDCHANNELS [pattern]
//
// CHANNELS of the shard channels.
func cmdPubsubShardchannels(c *client, args [][]byte, _ time.Time) { c.pubsubChannels(args, subShard) }

func (c *client) pubsubChannels(args [][]byte, kind subKind) {
	if len(args) > 3 {
		c.writeError(errSubcommandSyntax(args[1], "PUBSUB"))
		return
	}
	ps := &c.srv.pubsub
	ps.mu.RLock()
	names := make([]string, 0, len(ps.subs[kind]))
	for name := range ps.subs[kind] {
		if len(args) == 2 || glob.Match(args[2], name) {
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
func cmdPubsubNumsub(c *client, args [][]byte, _ time.Time) { c.pubsubNumsub(args, subChannel) }

// PUBSUB SHARDNUMSUB [shardchannel ...]
//
// NUMSUB of shard channels.
func cmdPubsubShardnumsub(c *client, args [][]byte, _ time.Time) { c.pubsubNumsub(args, subShard) }

func (c *client) pubsubNumsub(args [][]byte, kind subKind) {
	ps := &c.srv.pubsub
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	c.writeArray(2 * (len(args) - 2))
	for _, name := range args[2:] {
		c.writeBulk(name)
		n := 0
		if subs := ps.subs[kind][string(name)]; subs != nil {
			n = len(subs.clients)
		}
		c.writeInt(int64(n))
	}
}

// PUBSUB NUMPAT
//
// The count of patterns with a subscriber.
func cmdPubsubNumpat(c *client, _ [][]byte, _ time.Time) {
	_, patterns, _, _ := c.srv.pubsubCounts()
	c.writeInt(int64(patterns))
}

// pubsubHelp is Redis 7's PUBSUB HELP.
var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Print this help.",
}
