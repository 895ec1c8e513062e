package testkit

import (
	"strconv"
	"strings"

	"github.com/redcell/redcell/resp"
)

// The wire form of what a test sends and expects, as bytes a server writes:
// RESP2 unless named otherwise (Null3).

// Command is args as one multibulk command, as clients send it.
func Command(args ...string) string { return string(resp.AppendCommand(nil, args...)) }

// Replies that need no argument.
const (
	OK    = "+OK\r\n"
	Null2 = "$-1\r\n" // RESP2's null bulk string
	Null3 = "_\r\n"   // RESP3's null
)

// Simple is a simple string reply.
func Simple(s string) string { return "+" + s + "\r\n" }

// Err is an error reply; s starts with its prefix (ERR, WRONGTYPE, ...).
func Err(s string) string { return "-" + s + "\r\n" }

// Int is an integer reply.
func Int(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }

// Bulk is a bulk string reply.
func Bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// Ints is an array of integers: CL.THROTTLE's reply and its kin.
func Ints(ns ...int64) string { return array(len(ns), func(i int) string { return Int(ns[i]) }) }

// Bulks is an array of bulk strings.
func Bulks(ss ...string) string { return array(len(ss), func(i int) string { return Bulk(ss[i]) }) }

// Simples is an array of simple strings: a HELP subcommand's reply.
func Simples(ss ...string) string { return array(len(ss), func(i int) string { return Simple(ss[i]) }) }

// array is an array of n elements, the i-th elem(i).
func array(n int, elem func(i int) string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(n) + "\r\n")
	for i := range n {
		b.WriteString(elem(i))
	}
	return b.String()
}
