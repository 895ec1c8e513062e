package server

import (
	"slices"
	"strconv"
	"sync"
)

// Pub/Sub's registry: which clients are subscribed to each channel and to
// each pattern, server-wide. The commands are in cmd_pubsub.go.
//
// A subscriber's messages go through its connection's feed (feed.go),
// whose goroutine writes them: PUBLISH builds a message once per channel and
// per matching pattern and copies it onto each subscriber's feed, under the
// registry's read lock, and never waits for a subscriber to read. One that
// leaves more than its backlog (Limits.MaxOutput) unread is disconnected,
// as Redis's client-output-buffer-limit pubsub does. A client that never
// subscribes pays nothing on its commands: subscribing takes the connection
// off its event loop (command.offLoop), and the checks a subscriber's
// commands need are made only for a gated client (client.gate).
type pubsub struct {
	mu       sync.RWMutex
	channels map[string]map[*client]struct{}
	patterns map[string]*patternSubscribers
	clients  int // clients with a subscription: INFO's pubsub_clients
}

// patternSubscribers are the clients subscribed to one pattern, with the
// pattern as glob matching takes it.
type patternSubscribers struct {
	pattern []byte
	clients map[*client]struct{}
}

// subscriptions counts the client's channels and patterns, on its own
// goroutine: the count each (un)subscription reply carries, as Redis's.
func (c *client) subscriptions() int { return len(c.channels) + len(c.patterns) }

// subscribed reports, from any goroutine, whether the client has a
// subscription: Redis's pubsub client type and CLIENT LIST's flag P.
func (c *client) subscribed() bool { return c.subCount.Load()+c.psubCount.Load() > 0 }

// add subscribes c to name, a channel or a pattern, and reports whether it
// was not already. The caller holds mu, and runs on c's goroutine.
func (ps *pubsub) add(c *client, name string, pattern bool) bool {
	own := &c.channels
	if pattern {
		own = &c.patterns
	}
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
	if pattern {
		p := ps.patterns[name]
		if p == nil {
			if ps.patterns == nil {
				ps.patterns = make(map[string]*patternSubscribers)
			}
			p = &patternSubscribers{pattern: []byte(name), clients: make(map[*client]struct{})}
			ps.patterns[name] = p
		}
		p.clients[c] = struct{}{}
		c.psubCount.Add(1)
		return true
	}
	subs := ps.channels[name]
	if subs == nil {
		if ps.channels == nil {
			ps.channels = make(map[string]map[*client]struct{})
		}
		subs = make(map[*client]struct{})
		ps.channels[name] = subs
	}
	subs[c] = struct{}{}
	c.subCount.Add(1)
	return true
}

// remove unsubscribes c from name, a channel or a pattern, and reports
// whether it was subscribed. A channel or pattern left without subscribers
// is forgotten, as in Redis, so that subscribing to many cannot make the
// server hold them. The caller holds mu, and runs on c's goroutine.
func (ps *pubsub) remove(c *client, name string, pattern bool) bool {
	own := c.channels
	if pattern {
		own = c.patterns
	}
	if _, ok := own[name]; !ok {
		return false
	}
	delete(own, name)
	if pattern {
		p := ps.patterns[name]
		delete(p.clients, c)
		if len(p.clients) == 0 {
			delete(ps.patterns, name)
		}
		c.psubCount.Add(-1)
	} else {
		subs := ps.channels[name]
		delete(subs, c)
		if len(subs) == 0 {
			delete(ps.channels, name)
		}
		c.subCount.Add(-1)
	}
	if c.subscriptions() == 0 {
		ps.clients--
	}
	return true
}

// subscriptionNames lists c's channels, or its patterns, in byte order: UNSUBSCRIBE
// without arguments answers them in that order (Redis in its hash table's).
func (c *client) subscriptionNames(pattern bool) [][]byte {
	own := c.channels
	if pattern {
		own = c.patterns
	}
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
	for name := range c.channels {
		ps.remove(c, name, false)
	}
	for name := range c.patterns {
		ps.remove(c, name, true)
	}
	ps.mu.Unlock()
	c.regate()
}

// publish sends message on channel to its subscribers and to those of every
// pattern that matches it, and returns how many it was sent to, counted as
// Redis counts them: a client subscribed to the channel and to a matching
// pattern gets it, and counts, twice.
func (s *Server) publish(from *client, channel, message []byte) int64 {
	ps := &s.pubsub
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	var n int64
	if subs := ps.channels[string(channel)]; len(subs) > 0 {
		msg := appendMessage(nil, nil, channel, message)
		for to := range subs {
			deliver(from, to, msg)
		}
		n += int64(len(subs))
	}
	if len(ps.patterns) == 0 {
		return n
	}
	name := string(channel)
	for _, p := range ps.patterns {
		if !globMatch(p.pattern, name) {
			continue
		}
		msg := appendMessage(nil, p.pattern, channel, message)
		for to := range p.clients {
			deliver(from, to, msg)
		}
		n += int64(len(p.clients))
	}
	return n
}

// appendMessage appends a message as Redis sends it, a RESP2 array:
// "message" channel payload, or with a pattern "pmessage" pattern channel
// payload.
func appendMessage(b, pattern, channel, message []byte) []byte {
	if pattern == nil {
		b = append(b, "*3\r\n$7\r\nmessage\r\n"...)
	} else {
		b = append(b, "*4\r\n$8\r\npmessage\r\n"...)
		b = appendBulk(b, pattern)
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
		n := len(from.selfPushes)
		from.selfPushes = append(from.selfPushes, msg...)
		if from.resp == 3 {
			from.selfPushes[n] = '>'
		}
		return
	}
	if to.respSeen.Load() == 3 {
		msg[0] = '>'
		to.feed.push(msg)
		msg[0] = '*'
		return
	}
	to.feed.push(msg)
}

// sendSelfPushes writes the messages the client published to itself after
// the reply of the command that published them, as Redis 7.2 does: after
// PUBLISH's reply, and after EXEC's for a PUBLISH inside it.
func (c *client) sendSelfPushes() {
	if len(c.selfPushes) > 0 {
		c.conn.WriteRaw(c.selfPushes)
		c.selfPushes = c.selfPushes[:0]
		if cap(c.selfPushes) > 64<<10 {
			c.selfPushes = nil
		}
	}
}

// pubsubCounts are INFO's pubsub_channels, pubsub_patterns and
// pubsub_clients.
func (s *Server) pubsubCounts() (channels, patterns, clients int) {
	ps := &s.pubsub
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.channels), len(ps.patterns), ps.clients
}
