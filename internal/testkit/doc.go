// Package testkit is what redcell's tests share to talk to a server and to
// run one, as kvrocks's tests/gocase/util and miniredis's proto package
// serve theirs: a RESP client over a net.Conn (Conn, Dial, Converse), the
// wire form of the commands and replies a test sends and expects (Command,
// Ints, Bulk, ...), a parser of replies (ReadReply, Parse), a reader of the
// commands a node sends, for fake peers and masters (CommandReader, Peer),
// a runner of transcripts (RunSteps), and the redcell process started as a
// child (Program, Process).
//
// It is for tests alone: it imports testing and testify, and its functions
// that take a testing.TB fail the test rather than return an error. No
// package but a test may import it (TestOnlyTestsImportTheKit).
package testkit
