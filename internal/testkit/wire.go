package testkit

import (
	"strconv"
	"strings"

	"redcell/resp"
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
func Ints(ns ...int64) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(ns)) + "\r\n")
	for _, n := range ns {
		b.WriteString(Int(n))
	}
	return b.String()
}

// Bulks is an array of bulk strings.
func Bulks(ss ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(ss)) + "\r\n")
	for _, s := range ss {
		b.WriteString(Bulk(s))
	}
	return b.String()
}

// Simples is an array of simple strings: a HELP subcommand's reply.
func Simples(ss ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(ss)) + "\r\n")
	for _, s := range ss {
		b.WriteString(Simple(s))
	}
	return b.String()
}
