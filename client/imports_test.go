package client_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The client is what users import: its code (not its tests) imports nothing
// of redcell's but itself, so that go-redis is all it brings.
func TestTheClientImportsNothingOfRedcells(t *testing.T) {
	for _, dir := range []string{".", "httplimit"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, "github.com/redcell/redcell/") && path != "github.com/redcell/redcell/client" {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
	}
}
