package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteReplacesWholeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.conf")
	require.NoError(t, Write(path, []byte("one\n")))
	require.NoError(t, Write(path, []byte("two\n")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two\n", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")

	require.Error(t, Write(filepath.Join(dir, "missing", "f.conf"), []byte("x")))
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two\n", string(got), "a failed write leaves the file as it was")
}
