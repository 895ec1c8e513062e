// Package docs_test keeps the documentation true of the repository: every
// relative link of the README and docs/ resolves, to a file that exists and
// a heading it has; every flag --help prints is in docs/configuration.md;
// every fuzz target is in the Makefile's list.
package docs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redcell/redcell/config"
)

// root is the repository, from this package's directory.
const root = ".."

// markdown is every Markdown file the documentation is made of.
func markdown(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		require.NoError(t, err)
		files = append(files, rel)
	}
	return files
}

var (
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^(#{1,6}) +(.*)$`)
	notSlug    = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// prose returns text's lines outside fenced code blocks, inline code
// blanked: what a reader sees as prose, where links and headings are.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, inlineCode.ReplaceAllStringFunc(l, func(s string) string { return strings.Repeat(" ", len(s)) }))
		}
	}
	return out
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// text: lower case, punctuation dropped, spaces as dashes, a repeated
// heading numbered from -1.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(l)
		if fenced || m == nil {
			continue
		}
		s := strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.ReplaceAll(m[2], "`", "")), ""), " ", "-")
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// Every relative link of the documentation resolves: its file exists, and
// its anchor, if any, is a heading of that file (or of the linking file,
// for #anchor alone). The README's contents line is such links, so every
// heading it names exists.
func TestRelativeLinksResolve(t *testing.T) {
	texts := map[string]string{}
	read := func(path string) string {
		if s, ok := texts[path]; ok {
			return s
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		require.NoError(t, err)
		texts[path] = string(b)
		return texts[path]
	}
	checked := 0
	for _, file := range markdown(t) {
		for i, l := range prose(read(file)) {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Clean(filepath.Join(filepath.Dir(file), path))
					_, err := os.Stat(filepath.Join(root, dest))
					require.NoError(t, err, "%s:%d links to %s, which does not exist", file, i+1, target)
				}
				if anchor != "" {
					require.True(t, strings.HasSuffix(dest, ".md"), "%s:%d: an anchor in a file that is not Markdown: %s", file, i+1, target)
					require.True(t, anchors(read(dest))[anchor], "%s:%d links to %s: %s has no such heading", file, i+1, target, dest)
				}
				checked++
			}
		}
	}
	require.Greater(t, checked, 50, "the links the documentation holds")
}

// The README stays a five-minute read; the manual is in docs/.
func TestTheREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	require.LessOrEqual(t, bytes.Count(b, []byte("\n")), 300, "README.md: at most 300 lines")
}

// Every option --help prints is in docs/configuration.md, as `--name`.
func TestEveryFlagIsDocumented(t *testing.T) {
	var help bytes.Buffer
	_, err := config.Parse([]string{"--help"}, func(string) (string, bool) { return "", false }, &help)
	require.Error(t, err, "--help is an action")
	text := help.String()
	options, ok := strings.CutPrefix(text[strings.Index(text, "\nOPTIONS\n"):], "\nOPTIONS\n")
	require.True(t, ok, "--help has an OPTIONS section:\n%s", text)
	flag := regexp.MustCompile(`(?m)^    (--[a-z0-9-]+)`)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	require.NoError(t, err)
	flags := flag.FindAllStringSubmatch(options, -1)
	require.Greater(t, len(flags), 40, "the options --help lists")
	for _, f := range flags {
		require.Contains(t, string(doc), "`"+f[1]+"`", "docs/configuration.md does not document %s", f[1])
	}
}

// Every fuzz target in the repository is in the Makefile's FUZZ list, so
// that `make fuzz` runs them all before a release.
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	var found []string
	eachTestFile(t, func(path string, b []byte) {
		for _, m := range fuzz.FindAllStringSubmatch(string(b), -1) {
			found = append(found, "./"+filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, root+string(filepath.Separator))))+":"+m[1])
		}
	})
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	listed := regexp.MustCompile(`\./[\w/]+:Fuzz\w+`).FindAllString(string(makefile), -1)
	slices.Sort(found)
	slices.Sort(listed)
	require.Equal(t, found, listed, "the Makefile's FUZZ list")
}
