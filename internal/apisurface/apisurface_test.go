package apisurface

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxExported is the public API's budget: 90 exported identifiers across
// the public packages (156 before it was cut), one since for WithCohorts,
// the off switch of lock cohorting, six for what an operator needs of
// telemetry (issue 33): WithDeployment (deploys told from outages),
// WithRedactedNames with its two ready-made policies OmitNames and
// HashNames (lock names kept out of spans, metrics and logs),
// WithRedisSpans (the per-command spans off) and WithRedisWrapper (a
// caller's instrumentation of the Client's own connection), and one for
// WithConnectTimeout (issue 31): the bound on the wait of a call whose ctx
// has no deadline for a Redis the Client cannot reach, after which it
// fails with ErrUnavailable instead of waiting silently.
const maxExported = 98

// TestExportedIdentifiers counts the public API.
//
// The public packages are every package of the root module that is not under
// an internal/ directory (and not a testdata/ one): fairrw, fairrw/fairrwtest,
// compat and lua today; a new public package is counted as soon as it exists.
// Each is parsed from its non-test .go files with go/parser, and its count is:
//
//   - every exported top-level name: each exported name of a const or var
//     spec (one per name, so a grouped const block counts each of its
//     names), each exported type and each exported func; plus
//   - every exported method whose receiver is an exported type (the methods
//     of an unexported type cannot be called by name from outside, except
//     through an interface, whose methods are counted with the interface).
//
// Not counted: struct fields, interface methods (an interface counts once, as
// its type name), package names, and exported identifiers of test files.
//
// This definition reproduces the figures measured before the cut (fairrw
// 108, compat 31, lua 3, fairrwtest 14: 156) on the commits from 25c8115 to
// e653331; by the time the cut began (9e2bbab) fairrw had grown
// to 118 (Ping, Lease.Guard, further holds, ErrClockSkew, ErrNotReplicated,
// WithSyncReplicas...): 166 in all.
//
// The test fails when the total exceeds maxExported, printing the count of
// each package and every identifier counted.
func TestExportedIdentifiers(t *testing.T) {
	root := moduleRoot(t)
	counts := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		base := d.Name()
		if rel != "." {
			if base == "internal" || base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
				return filepath.SkipDir
			}
			// Another module (bench, integration) is not part of the root
			// module's API.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		names, err := exported(path)
		if err != nil {
			return err
		}
		if names != nil {
			counts[rel] = names
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) == 0 {
		t.Fatal("no public package found under", root)
	}
	pkgs := make([]string, 0, len(counts))
	total := 0
	for p, names := range counts {
		pkgs = append(pkgs, p)
		total += len(names)
	}
	sort.Strings(pkgs)
	var report strings.Builder
	for _, p := range pkgs {
		fmt.Fprintf(&report, "%s: %d\n", p, len(counts[p]))
	}
	fmt.Fprintf(&report, "total: %d (budget %d)\n", total, maxExported)
	t.Log("\n" + report.String())
	if total > maxExported {
		for _, p := range pkgs {
			fmt.Fprintf(&report, "\n%s:\n  %s\n", p, strings.Join(counts[p], "\n  "))
		}
		t.Errorf("the public packages export %d identifiers, more than %d:\n%s", total, maxExported, report.String())
	}
}

// exported returns the identifiers counted in the package of dir, sorted and
// each once (a name declared in two files for different build tags counts
// once), or nil when dir holds no non-test Go file.
func exported(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var names []string
	seen := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if names == nil {
			names = []string{}
		}
		for _, name := range fileExported(f) {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

func fileExported(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							names = append(names, n.Name)
						}
					}
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						names = append(names, s.Name.Name)
					}
				}
			}
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				names = append(names, d.Name.Name)
				continue
			}
			recv := receiverType(d.Recv.List[0].Type)
			if ast.IsExported(recv) {
				names = append(names, recv+"."+d.Name.Name)
			}
		}
	}
	return names
}

// receiverType returns the name of a method's receiver type, without its
// pointer or type parameters.
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// moduleRoot returns the directory of the root module's go.mod: two levels
// above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "module github.com/fairrw/rwlock\n") {
		t.Fatalf("%s/go.mod is not the root module's", root)
	}
	return root
}
