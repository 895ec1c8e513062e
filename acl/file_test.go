package acl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// redisSaved is an ACL file as Redis 7.0's ACL SAVE wrote it (without the
// sanitize-payload flag 7.2 adds); it loads here, and saves as 7.2 writes
// it.
const redisSaved = `user app on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~app:* %R~ro:* %W~w:* resetchannels &chan -@all +@read +set -keys
user default on nopass ~* &* +@all
user ops on #03dec7bdea4ddc55b6dee093329746fe614a95b555054997c213100b238f6958 ~* &* +@all -@dangerous +client|kill
user sel on nopass ~a* resetchannels -@all +get (~b* resetchannels -@all +set)
`

func TestLoadSave(t *testing.T) {
	cs := testCommands()
	us, errs := Load(cs, []byte(redisSaved), DefaultUser(cs, "ignored"))
	require.Empty(t, errs)
	want := strings.NewReplacer(" on #", " on sanitize-payload #", " on nopass ", " on nopass sanitize-payload ").Replace(redisSaved)
	require.Equal(t, want, string(us.Save()))
	require.Equal(t, 4, us.Len())
	require.True(t, us.Get("ops").CheckPassword([]byte("opspw")))
	require.True(t, us.Get("default").NoPass(), "the file's default user, not the one given")

	// What Save writes loads back the same.
	again, errs := Load(cs, us.Save(), nil)
	require.Empty(t, errs)
	require.Equal(t, string(us.Save()), string(again.Save()))

	// Blank lines and CRLF are fine; without a default user's line, the
	// default given is the default user.
	us, errs = Load(cs, []byte("\r\n  \nuser app on >pw +cl.throttle ~app:*\r\n\n"), DefaultUser(cs, "req"))
	require.Empty(t, errs)
	require.Equal(t, []string{"app", "default"}, names(us))
	require.True(t, us.Get("default").CheckPassword([]byte("req")))
	require.Equal(t, "on sanitize-payload #"+HashPassword([]byte("pw"))+" ~app:* resetchannels -@all +cl.throttle", us.Get("app").Describe())

	// Users may be added, replaced and deleted; All is in name order.
	us.Set(NewUser(cs, "aaa"))
	require.True(t, us.Delete("app"))
	require.False(t, us.Delete("app"))
	require.Equal(t, []string{"aaa", "default"}, names(us))
}

func names(us *Users) []string {
	var out []string
	for _, u := range us.All() {
		out = append(out, u.Name())
	}
	return out
}

// Every error of a file is reported with its line, and nothing loads.
func TestLoadErrors(t *testing.T) {
	cs := testCommands()
	file := strings.Join([]string{
		"user ok on nopass +get",             // 1
		"# a comment",                        // 2
		"users bob on",                       // 3
		"user",                               // 4
		"user ok on",                         // 5
		"user a\tb on",                       // 6
		"user bad on +nosuch -nosuch2 bogus", // 7
		"user bad2 bogus ~k allkeys ~j",      // 8
		"user sel (~a +get",                  // 9
	}, "\n")
	us, errs := Load(cs, []byte(file), nil)
	require.Nil(t, us)
	require.Equal(t, []LineError{
		{Line: 2, Err: ErrNoUserKeyword},
		{Line: 3, Err: ErrNoUserKeyword},
		{Line: 4, Err: ErrNoUserKeyword},
		{Line: 5, Name: "ok", Err: ErrDuplicateUser},
		{Line: 6, Name: "a\tb", Err: ErrBadUsername},
		{Line: 7, Name: "bad", Op: "+nosuch", Err: ErrUnknownCommand},
		{Line: 7, Name: "bad", Op: "-nosuch2", Err: ErrUnknownCommand},
		{Line: 7, Name: "bad", Op: "bogus", Err: ErrSyntax},
		{Line: 8, Name: "bad2", Op: "bogus", Err: ErrSyntax},
		{Line: 9, Name: "sel", Err: ErrUnmatchedParen},
	}, errs)
	require.Equal(t, "acl: line 7: rule '+nosuch': acl: unknown command or category", errs[5].Error())
}
