package resp

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every RESP2 reply as a client's tool takes it, an error inside an array
// as an element; malformed replies are refused.
func TestReadReply(t *testing.T) {
	in := "+OK\r\n:42\r\n$5\r\nab\r\nc\r\n$-1\r\n*3\r\n:0\r\n$1\r\nx\r\n-ERR inside\r\n*-1\r\n$0\r\n\r\n+\r\n"
	br := bufio.NewReader(strings.NewReader(in))
	for i, want := range []any{"OK", int64(42), "ab\r\nc", nil, []any{int64(0), "x", ReplyError("ERR inside")}, nil, "", ""} {
		got, err := ReadReply(br)
		require.NoError(t, err, "reply %d", i)
		require.Equal(t, want, got, "reply %d", i)
	}
	_, err := ReadReply(bufio.NewReader(strings.NewReader("-ERR no\r\n")))
	require.Equal(t, ReplyError("ERR no"), err)
	for _, bad := range []string{"$3\r\nabcd\r\n", "?\r\n", ":x\r\n", "*-2\r\n", "+OK\n"} {
		got, err := ReadReply(bufio.NewReader(strings.NewReader(bad)))
		require.True(t, errors.Is(err, ErrMalformedReply), "ReadReply(%q) = %v, %v", bad, got, err)
	}
}

func TestAppendCommand(t *testing.T) {
	require.Equal(t, "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", string(AppendCommand(nil, "GET", "")))
}
