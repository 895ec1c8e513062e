package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cluster-internals.md names code as `package.Name` or `package.Type.Method`:
// every such name must be declared in that package (a directory at the
// repository's root or under internal/), so that the page stays true when
// the code is renamed.
func TestClusterInternalsNamesExist(t *testing.T) {
	text, err := os.ReadFile("cluster-internals.md")
	require.NoError(t, err)
	names := regexp.MustCompile("`([a-z]+)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\.([A-Za-z_][A-Za-z0-9_]*))?`").FindAllStringSubmatch(string(text), -1)
	require.Greater(t, len(names), 30, "the page names the code it describes")
	decls := map[string]map[string]bool{} // by package: "Name" and "Type.Method"
	for _, n := range names {
		pkg, name, method := n[1], n[2], n[3]
		if !isPackage(pkg) && strings.ToLower(name) == name {
			continue // a file name: nodes.conf
		}
		if decls[pkg] == nil {
			decls[pkg] = declared(t, pkg)
		}
		want := name
		if method != "" {
			want = name + "." + method
		}
		require.True(t, decls[pkg][want], "cluster-internals.md names %s.%s, which package %s does not declare", pkg, want, pkg)
	}
}

// isPackage reports whether pkg is a directory at the repository's root or
// under internal/.
func isPackage(pkg string) bool {
	for _, dir := range []string{filepath.Join("..", pkg), filepath.Join("..", "internal", pkg)} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// declared returns the top-level names of package pkg's non-test files, and
// its methods as "Type.Method".
func declared(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	dir := filepath.Join("..", pkg)
	if _, err := os.Stat(dir); err != nil {
		dir = filepath.Join("..", "internal", pkg)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no package %s", pkg)
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					out[d.Name.Name] = true
					continue
				}
				typ := d.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					out[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						out[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							out[n.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}
