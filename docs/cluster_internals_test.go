package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// internalsPage names the code it describes, so that a rename that leaves
// it behind fails here rather than misleading its next reader.
const internalsPage = "cluster-internals.md"

var (
	// codeName is a backticked `pkg.Name` or `pkg.Type.Method`.
	codeName = regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\.([A-Za-z_][A-Za-z0-9_]*))?`")
	// testFile is a backticked path of a test file; testName a test.
	testFile = regexp.MustCompile("`([A-Za-z0-9_./-]+_test\\.go)`")
	testName = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")
)

// notCode are the dotted names the page gives that are files, not code:
// any other one must be a package's declaration.
var notCode = map[string]bool{"nodes.conf": true}

// TestClusterInternalsNamesExist: every `pkg.Name` and `pkg.Type.Method` of
// cluster-internals.md is declared by the package pkg (a directory at the
// repository's root or under internal/) in its non-test files.
func TestClusterInternalsNamesExist(t *testing.T) {
	text, err := os.ReadFile(internalsPage)
	require.NoError(t, err)
	names := codeName.FindAllStringSubmatch(string(text), -1)
	require.Greater(t, len(names), 50, "the page names the code it describes")
	decls := map[string]map[string]bool{} // by package: "Name" and "Type.Method"
	for _, n := range names {
		pkg, name, method := n[1], n[2], n[3]
		if notCode[strings.Trim(n[0], "`")] {
			continue
		}
		if decls[pkg] == nil {
			decls[pkg] = declared(t, pkg)
		}
		want := name
		if method != "" {
			want = name + "." + method
		}
		require.True(t, decls[pkg][want], "%s names %s.%s, which package %s does not declare", internalsPage, pkg, want, pkg)
	}
}

// TestClusterInternalsTestsExist: every test file and test the page points
// at exists.
func TestClusterInternalsTestsExist(t *testing.T) {
	text, err := os.ReadFile(internalsPage)
	require.NoError(t, err)
	files := testFile.FindAllStringSubmatch(string(text), -1)
	tests := testName.FindAllStringSubmatch(string(text), -1)
	require.Greater(t, len(files), 10, "the page says where the tests are")
	require.Greater(t, len(tests), 10, "the page names the tests")
	for _, f := range files {
		_, err := os.Stat(filepath.Join(root, f[1]))
		require.NoError(t, err, "%s points at the test file %s", internalsPage, f[1])
	}
	declaredTests := testFuncs(t)
	for _, name := range tests {
		require.True(t, declaredTests[name[1]], "%s names the test %s, which no _test.go file declares", internalsPage, name[1])
	}
}

// packageDir is pkg's directory: at the repository's root, or under
// internal/; "" when neither exists.
func packageDir(pkg string) string {
	for _, dir := range []string{filepath.Join(root, pkg), filepath.Join(root, "internal", pkg)} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
	}
	return ""
}

// declared returns the top-level names of package pkg's non-test files, and
// its methods as "Type.Method".
func declared(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	dir := packageDir(pkg)
	require.NotEmpty(t, dir, "%s names package %s: no such directory at the repository's root or under internal/", internalsPage, pkg)
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
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
				} else if typ := receiverType(d.Recv.List[0].Type); typ != "" {
					out[typ+"."+d.Name.Name] = true
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
	require.NotEmpty(t, out, "%s names package %s, which declares nothing", internalsPage, pkg)
	return out
}

// receiverType is the name of a method's receiver type: T for T, *T, T[K]
// and *T[K].
func receiverType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// testFuncs returns the names of the Test functions the repository's
// _test.go files declare.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	out := map[string]bool{}
	eachTestFile(t, func(_ string, b []byte) {
		for _, m := range decl.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
	})
	return out
}

// eachTestFile calls fn with the path and the contents of every _test.go
// file of the repository (.git, node_modules and testdata left out).
func eachTestFile(t *testing.T, fn func(path string, b []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, b)
		return nil
	})
	require.NoError(t, err)
}
