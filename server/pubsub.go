package server

import (
	"slices"
	"strconv"
	"sync"

	"github.com/redcell/redcell/internal/glob"
)

// Pub/Sub's registry: which clients are subscribed to each channel and to
// each pattern, server-wide. The commands are pubsubFamily.
//
// A subscriber's messages go through its connection's outbox,
// whose goroutine writes them: PUBLISH builds a message once per channel and
// per matching pattern and copies it onto each subscriber's outbox, under the
// registry's read lock, and never waits for a subscriber to read. One that
// leaves more than its backlog (Limits.MaxOutput) unread is disconnected,
// as Redis's client-output-buffer-limit pubsub does. A client that never
// subscribes pays nothing on its commands: subscribing takes the connection
// off its event loop (command.offLoop), and the checks a subscriber's
// commands need are made only for a gated client (client.gate).
type pubsub struct {
	mu sync.RWMutex
	// subs are the subscribers of each channel, pattern and shard channel
	// (SSUBSCRIBE), by kind.
	subs    [subKinds]map[string]*subscribers
	clients int // clients with a subscription: INFO's pubsub_clients
}

// subKind is what a subscription names: a channel (SUBSCRIBE), a pattern
// of channels (PSUBSCRIBE) or a shard channel (SSUBSCRIBE, Redis 7's
// sharded Pub/Sub: channels apart from the others, which in a cluster live
// in their name's slot, as keys do).
type subKind int

const (
	subChannel subKind = iota
	subPattern
	subShard
	subKinds
)

// subscribers are the clients subscribed to one name, with the name as
// glob matching takes it (for a pattern).
type subscribers struct {
	name    []byte
	clients map[*client]struct{}
}

// subscriptions counts the client's subscriptions of every kind, on its own
// goroutine: whether it is in subscribed mode.
func (c *client) subscriptions() int {
	return len(c.sub.names[subChannel]) + len(c.sub.names[subPattern]) + len(c.sub.names[subShard])
}

// subscriptionCount is the count an (un)subscription reply of kind carries,
// as Redis's: channels and patterns together, shard channels apart.
func (c *client) subscriptionCount(kind subKind) int {
	if kind == subShard {
		return len(c.sub.names[subShard])
	}
	return len(c.sub.names[subChannel]) + len(c.sub.names[subPattern])
}

// subscribed reports, from any goroutine, whether the client has a
// subscription: Redis's pubsub client type and CLIENT LIST's flag P.
func (c *client) subscribed() bool {
	return c.sub.counts[subChannel].Load()+c.sub.counts[subPattern].Load()+c.sub.counts[subShard].Load() > 0
}

// add subscribes c to name, of kind, and reports whether it was not
// already. The caller holds mu, and runs on c's goroutine.
func (ps *pubsub) add(c *client, name string, kind subKind) bool {
	own := &c.sub.names[kind]
	if _, dup := (*own)[name]; dup {
		return false
	}
	if c.subscriptions() == 0 {
		ps.clients++
	}
	if *own == nil {
		*own = make(map[string]struct{})
	}
	(*own)[name] = struct{}{}
	subs := ps.subs[kind][name]
	if subs == nil {
		if ps.subs[kind] == nil {
			ps.subs[kind] = make(map[string]*subscribers)
		}
		subs = &subscribers{name: []byte(name), clients: make(map[*client]struct{})}
		ps.subs[kind][name] = subs
	}
	subs.clients[c] = struct{}{}
	c.sub.counts[kind].Add(1)
	return true
}

// remove unsubscribes c from name, of kind, and reports whether it was
// subscribed. A name left without subscribers is forgotten, as in Redis, so
// that subscribing to many cannot make the server hold them. The caller
// holds mu, and runs on c's goroutine.
func (ps *pubsub) remove(c *client, name string, kind subKind) bool {
	own := c.sub.names[kind]
	if _, ok := own[name]; !ok {
		return false
	}
	delete(own, name)
	subs := ps.subs[kind][name]
	delete(subs.clients, c)
	if len(subs.clients) == 0 {
		delete(ps.subs[kind], name)
	}
	c.sub.counts[kind].Add(-1)
	if c.subscriptions() == 0 {
		ps.clients--
	}
	return true
}

// subscriptionNames lists c's names of kind in byte order: UNSUBSCRIBE
// without arguments answers them in that order (Redis in its hash table's).
func (c *client) subscriptionNames(kind subKind) [][]byte {
	own := c.sub.names[kind]
	names := make([][]byte, 0, len(own))
	for name := range own {
		names = append(names, []byte(name))
	}
	slices.SortFunc(names, func(a, b []byte) int { return slices.Compare(a, b) })
	return names
}

// unsubscribeAll drops every subscription of c, without a reply: its
// connection has ended, or it sent RESET.
func (s *Server) unsubscribeAll(c *client) {
	if c.subscriptions() == 0 {
		return
	}
	ps := &s.pubsub
	ps.mu.Lock()
	for kind := range subKinds {
		for name := range c.sub.names[kind] {
			ps.remove(c, name, kind)
		}
	}
	ps.mu.Unlock()
	c.regate()
}

// publish sends message on channel to its subscribers and to those of every
// pattern that matches it, and returns how many it was sent to, counted as
// Redis counts them: a client subscribed to the channel and to a matching
// pattern gets it, and counts, twice. A shard channel's message (SPUBLISH)
// reaches its subscribers only.
func (s *Server) publish(from *client, channel, message []byte, kind subKind) int64 {
	ps := &s.pubsub
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	var n int64
	if subs := ps.subs[kind][string(channel)]; subs != nil {
		msg := appendMessage(nil, kind, nil, channel, message)
		for to := range subs.clients {
			deliver(from, to, msg)
		}
		n += int64(len(subs.clients))
	}
	if kind == subShard || len(ps.subs[subPattern]) == 0 {
		return n
	}
	name := string(channel)
	for _, p := range ps.subs[subPattern] {
		if !glob.Match(p.name, name) {
			continue
		}
		msg := appendMessage(nil, subPattern, p.name, channel, message)
		for to := range p.clients {
			deliver(from, to, msg)
		}
		n += int64(len(p.clients))
	}
	return n
}

// appendMessage appends a message as Redis sends it, a RESP2 array:
// "message" channel payload, "smessage" for a shard channel, or for a
// pattern "pmessage" pattern channel payload.
func appendMessage(b []byte, kind subKind, pattern, channel, message []byte) []byte {
	switch kind {
	case subPattern:
		b = append(b, "*4\r\n$8\r\npmessage\r\n"...)
		b = appendBulk(b, pattern)
	case subShard:
		b = append(b, "*3\r\n$8\r\nsmessage\r\n"...)
	default:
		b = append(b, "*3\r\n$7\r\nmessage\r\n"...)
	}
	b = appendBulk(b, channel)
	return appendBulk(b, message)
}

func appendBulk(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// deliver queues msg (appendMessage) for to, in the protocol it speaks: a
// RESP3 client's message is a push, which differs from the RESP2 array in
// its first byte only, so one buffer serves both (push copies it). A message
// the publisher sends itself waits in selfPushes for its command's reply to
// be written (sendSelfPushes): to itself, it would otherwise go before the
// replies of the batch not yet sent.
func deliver(from, to *client, msg []byte) {
	if to == from {
		n := len(from.sub.selfPushes)
		from.sub.selfPushes = append(from.sub.selfPushes, msg...)
		if from.session.resp == 3 {
			from.sub.selfPushes[n] = '>'
		}
		return
	}
	if to.session.respSeen.Load() == 3 {
		msg[0] = '>'
		to.outbox.Push(msg)
		msg[0] = '*'
		return
	}
	to.outbox.Push(msg)
}

// sendSelfPushes writes the messages the client published to itself after
// the reply of the command that published them, as Redis 7.2 does: after
// PUBLISH's reply, and after EXEC's for a PUBLISH inside it.
func (c *client) sendSelfPushes() {
	if len(c.sub.selfPushes) > 0 {
		c.conn.WriteRaw(c.sub.selfPushes)
		c.sub.selfPushes = c.sub.selfPushes[:0]
		if cap(c.sub.selfPushes) > 64<<10 {
			c.sub.selfPushes = nil
		}
	}
}

// pubsubCounts are INFO's pubsub_channels, pubsub_patterns,
// pubsubshard_channels and pubsub_clients.
func (s *Server) pubsubCounts() (channels, patterns, shardChannels, clients int) {
	ps := &s.pubsub
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.subs[subChannel]), len(ps.subs[subPattern]), len(ps.subs[subShard]), ps.clients
}
