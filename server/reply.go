package server

import (
	"strconv"
	"strings"
)

// Reply writers that know the connection's protocol. Where RESP2 and RESP3
// differ (null, maps, sets, verbatim text) the client's HELLO choice decides;
// everything else goes straight to the connection's writers (connection).

// writeError writes e and counts it by its kind.
func (c *client) writeError(e replyError) {
	// A CR or LF inside an error would break the protocol: Redis replaces
	// them with spaces, and so do we.
	if strings.ContainsAny(e.text, "\r\n") {
		e.text = strings.NewReplacer("\r", " ", "\n", " ").Replace(e.text)
	}
	c.countError(e)
	c.conn.WriteError(e.text)
}

func (c *client) writeOK()                 { c.conn.WriteString("OK") }
func (c *client) writeSimple(s string)     { c.conn.WriteString(s) }
func (c *client) writeInt(n int64)         { c.conn.WriteInt64(n) }
func (c *client) writeBulk(b []byte)       { c.conn.WriteBulk(b) }
func (c *client) writeBulkString(s string) { c.conn.WriteBulkString(s) }
func (c *client) writeArray(n int)         { c.conn.WriteArray(n) }

// writeInts writes a decision's reply: an array of five integers.
func (c *client) writeInts(v [5]int64) { c.conn.WriteInts(v) }

// writeHelp writes a HELP subcommand's lines, as Redis does: an array of
// simple strings.
func (c *client) writeHelp(lines []string) {
	c.writeArray(len(lines))
	for _, line := range lines {
		c.writeSimple(line)
	}
}

func (c *client) writeNull() {
	if c.session.resp == 3 {
		c.conn.WriteRaw([]byte("_\r\n"))
		return
	}
	c.conn.WriteNull()
}

// writeNullArray writes the null array (EXEC of a transaction whose watched
// keys changed): *-1 under RESP2, RESP3's null.
func (c *client) writeNullArray() {
	if c.session.resp == 3 {
		c.conn.WriteRaw([]byte("_\r\n"))
		return
	}
	c.conn.WriteRaw([]byte("*-1\r\n"))
}

// writeMap writes a map header of n pairs; RESP2 gets a flat array of 2n.
func (c *client) writeMap(n int) {
	if c.session.resp == 3 {
		c.writeHeader('%', n)
		return
	}
	c.conn.WriteArray(2 * n)
}

// writeSet writes a set header of n members; RESP2 gets an array.
func (c *client) writeSet(n int) {
	if c.session.resp == 3 {
		c.writeHeader('~', n)
		return
	}
	c.conn.WriteArray(n)
}

// writePush writes the header of a push of n elements: RESP3's out-of-band
// kind, which RESP2 has not, so an array there.
func (c *client) writePush(n int) {
	if c.session.resp == 3 {
		c.writeHeader('>', n)
		return
	}
	c.conn.WriteArray(n)
}

func (c *client) writeHeader(kind byte, n int) {
	var b [24]byte
	h := append(b[:0], kind)
	h = strconv.AppendInt(h, int64(n), 10)
	h = append(h, '\r', '\n')
	c.conn.WriteRaw(h)
}

// writeDouble writes f as Redis's addReplyDouble: a RESP3 double, or a bulk
// string under RESP2, in the shortest form that reads back as f.
func (c *client) writeDouble(f float64) {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if c.session.resp == 3 {
		c.conn.WriteRaw([]byte("," + s + "\r\n"))
		return
	}
	c.conn.WriteBulkString(s)
}

// writeVerbatim writes text as RESP3 verbatim text (as Redis does for INFO
// and CLIENT LIST), or as a bulk string under RESP2.
func (c *client) writeVerbatim(text string) {
	if c.session.resp != 3 {
		c.conn.WriteBulkString(text)
		return
	}
	b := make([]byte, 0, len(text)+32)
	b = append(b, '=')
	b = strconv.AppendInt(b, int64(len(text)+4), 10)
	b = append(b, "\r\ntxt:"...)
	b = append(b, text...)
	b = append(b, '\r', '\n')
	c.conn.WriteRaw(b)
}
