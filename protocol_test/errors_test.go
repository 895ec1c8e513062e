package protocol_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcell/redcell/internal/testkit/harness"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/internal/testkit"
)

// CL.THROTTLE's error texts (server's errBurstNotInteger and the rest), as a
// user reads them.
const (
	errWrongArgs      = "ERR wrong number of arguments for 'cl.throttle' command"
	errBurstNotInt    = "ERR max_burst is not an integer or out of range"
	errCountNotInt    = "ERR count is not an integer or out of range"
	errPeriodNotInt   = "ERR period is not an integer or out of range"
	errQuantityNotInt = "ERR quantity is not an integer or out of range"
	errNegativeBurst  = "ERR max_burst must not be negative"
	errCountPositive  = "ERR count must be positive"
	errPeriodPositive = "ERR period must be positive"
	errZeroRate       = "ERR zero rates are not supported"
	errNegativeQty    = "ERR quantity must not be negative"
	errOutOfRange     = "ERR rate limit parameters out of range"
	errNoAuth         = "NOAUTH Authentication required."
	errWrongPass      = "WRONGPASS invalid username-password pair or user is disabled."
	errNotInteger     = "ERR value is not an integer or out of range"
	errDBIndex        = "ERR DB index is out of range"
	errSyntax         = "ERR syntax error"
	errHelloNoAuth    = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errAuthNoPassword = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
)

type errorCase struct {
	args []string // after "CL.THROTTLE"
	want string
}

// throttleErrorCases covers every way CL.THROTTLE refuses its arguments, on
// key k, whose state the tests set up first.
var throttleErrorCases = []errorCase{
	// Fewer than 5 or more than 6 arguments.
	{nil, errWrongArgs},
	{[]string{"k"}, errWrongArgs},
	{[]string{"k", "4"}, errWrongArgs},
	{[]string{"k", "4", "1"}, errWrongArgs},
	{[]string{"k", "4", "1", "1", "1", "1"}, errWrongArgs},
	{[]string{"k", "4", "1", "1", "1", "1", "1", "1"}, errWrongArgs},

	// Numbers that do not parse as int64, named by position.
	{[]string{"k", "x", "1", "1"}, errBurstNotInt},
	{[]string{"k", "+4", "1", "1"}, errBurstNotInt},
	{[]string{"k", " 4", "1", "1"}, errBurstNotInt},
	{[]string{"k", "4 ", "1", "1"}, errBurstNotInt},
	{[]string{"k", "4.0", "1", "1"}, errBurstNotInt},
	{[]string{"k", "", "1", "1"}, errBurstNotInt},
	{[]string{"k", "-", "1", "1"}, errBurstNotInt},
	{[]string{"k", "--4", "1", "1"}, errBurstNotInt},
	{[]string{"k", "1e3", "1", "1"}, errBurstNotInt},
	{[]string{"k", "0x10", "1", "1"}, errBurstNotInt},
	{[]string{"k", "9223372036854775808", "1", "1"}, errBurstNotInt},
	{[]string{"k", "99999999999999999999", "1", "1"}, errBurstNotInt},
	{[]string{"k", "٤", "1", "1"}, errBurstNotInt}, // an Arabic-Indic digit four
	{[]string{"k", "4", "one", "1"}, errCountNotInt},
	{[]string{"k", "4", "+1", "1"}, errCountNotInt},
	{[]string{"k", "4", "1", "1.5"}, errPeriodNotInt},
	{[]string{"k", "4", "1", "1s"}, errPeriodNotInt},
	{[]string{"k", "4", "1", "1", "two"}, errQuantityNotInt},
	{[]string{"k", "4", "1", "1", "-9223372036854775809"}, errQuantityNotInt},
	{[]string{"k", "4", "1", "1", "\x001"}, errQuantityNotInt},
	// Every argument is parsed before any is checked.
	{[]string{"k", "-1", "x", "1"}, errCountNotInt},

	// Negative and zero arguments.
	{[]string{"k", "-1", "1", "1"}, errNegativeBurst},
	{[]string{"k", "-9223372036854775808", "1", "1"}, errNegativeBurst},
	{[]string{"k", "4", "-1", "1"}, errCountPositive},
	{[]string{"k", "4", "1", "-1"}, errPeriodPositive},
	{[]string{"k", "4", "0", "1"}, errZeroRate},
	{[]string{"k", "4", "1", "0"}, errZeroRate},
	{[]string{"k", "4", "0", "0"}, errZeroRate},
	{[]string{"k", "4", "2000000000", "1"}, errZeroRate}, // ei = 0.5 ns truncates to 0
	{[]string{"k", "4", "1", "1", "-1"}, errNegativeQty},
	// Checked in argument order.
	{[]string{"k", "-1", "-1", "-1", "-1"}, errNegativeBurst},
	{[]string{"k", "4", "-1", "0", "1"}, errCountPositive},
	{[]string{"k", "4", "0", "-1", "1"}, errPeriodPositive},

	// Overflow of period * 1e9, of max_burst + 1, of dvt, of inc, of new_tat.
	{[]string{"k", "4", "1", "9223372037"}, errOutOfRange},
	{[]string{"k", "9223372036854775807", "1", "1"}, errOutOfRange},
	{[]string{"k", "1099511627776", "1", "1048576"}, errOutOfRange},
	{[]string{"k", "4", "1", "1", "1099511627776"}, errOutOfRange},
	// ei = 1e18 ns; now (~1.8e18) + 8e18 passes 2^63.
	{[]string{"k", "0", "1", "1000000000", "8"}, errOutOfRange},
}

// Every error row, on one connection: the exact error, then the same
// connection answers the next command correctly and key k is unchanged.
func TestThrottleErrorsRaw(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1"))
	tat := strconv.FormatInt(harness.T0.Add(time.Second).UnixNano(), 10)
	for i, tc := range throttleErrorCases {
		args := append([]string{"CL.THROTTLE"}, tc.args...)
		if got := c.Do(args...); got != testkit.Err(tc.want) {
			t.Errorf("case %d: %q = %q want %q", i, args, got, testkit.Err(tc.want))
		}
		require.Equal(t, testkit.Bulk(tat), c.Do("GET", "k"), "case %d: %q changed the TAT", i, args)
		require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("CL.THROTTLE", "k", "4", "1", "1", "0"), "case %d: %q changed the limiter", i, args)
	}
	require.Equal(t, testkit.Int(1), c.Do("DBSIZE"), "no error created a key")
	require.Equal(t, testkit.Int(1000), c.Do("PTTL", "k"))
}

// The command name is case-insensitive, errors included.
func TestThrottleCommandNameIsCaseInsensitive(t *testing.T) {
	ts := harness.StartServer(t)
	c := ts.Raw(t)
	require.Equal(t, testkit.Ints(0, 5, 4, -1, 1), c.Do("cl.throttle", "k", "4", "1", "1"))
	require.Equal(t, testkit.Ints(0, 5, 3, -1, 2), c.Do("Cl.Throttle", "k", "4", "1", "1"))
	require.Equal(t, testkit.Err(errWrongArgs), c.Do("cL.tHROTTLE", "k"))
}

// The same texts reach a go-redis user as the error's message, and the
// pooled connection stays usable.
func TestThrottleErrorsGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			ts := harness.StartServer(t)
			rdb := ts.GoRedis(t, func(o *redis.Options) { o.Protocol = proto; o.PoolSize = 1 })
			got, err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 4, 1, 1).Int64Slice()
			require.NoError(t, err)
			require.Equal(t, []int64{0, 5, 4, -1, 1}, got)
			for i, tc := range throttleErrorCases {
				args := append([]string{"CL.THROTTLE"}, tc.args...)
				err := rdb.Do(harness.Ctx(t), anyArgs(args)...).Err()
				var rerr redis.Error
				if !errors.As(err, &rerr) || err.Error() != tc.want {
					t.Errorf("case %d: %q = %v want redis error %q", i, args, err, tc.want)
				}
				got, err := rdb.Do(harness.Ctx(t), "CL.THROTTLE", "k", 4, 1, 1, 0).Int64Slice()
				require.NoError(t, err, "case %d", i)
				require.Equal(t, []int64{0, 5, 4, -1, 1}, got, "case %d: %q changed the limiter", i, args)
			}
			require.Equal(t, uint32(1), rdb.PoolStats().TotalConns, "one connection served every case")
		})
	}
}

// redis-cli prints the error text; the key is unchanged afterwards.
func TestThrottleErrorsRedisCLI(t *testing.T) {
	harness.RedisCLI(t)
	ts := harness.StartServer(t)
	require.Equal(t, "0\n5\n4\n-1\n1\n", harness.CLI(t, ts.Port, "", "CL.THROTTLE", "k", "4", "1", "1"))
	var stdin, want strings.Builder
	for _, tc := range throttleErrorCases {
		if !oneLine(tc.args) {
			continue // not expressible as one line of redis-cli input
		}
		stdin.WriteString("CL.THROTTLE " + strings.Join(tc.args, " ") + "\n")
		want.WriteString(tc.want + "\n\n")
	}
	stdin.WriteString("CL.THROTTLE k 4 1 1 0\n")
	want.WriteString("0\n5\n4\n-1\n1\n")
	require.Equal(t, want.String(), harness.CLI(t, ts.Port, stdin.String()))
}

// oneLine reports whether args survive redis-cli's splitting of a stdin line.
func oneLine(args []string) bool {
	if len(args) == 0 {
		return false
	}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \x00\"'") {
			return false
		}
	}
	return true
}
