package fairrw_test

import (
	"bytes"
	"context"
	"go/build"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The README's first screen is a complete program that a reader pastes
// into a file and runs; TestReadme keeps it so:
//
//   - Program: the first ```go block of README.md is package main, is
//     gofmt-formatted, and builds and passes go vet as pasted, with the
//     current toolchain and the module's own dependencies (offline:
//     GOPROXY=off, GOTOOLCHAIN=local);
//   - TestCommand: the section "## Tests" starts with the test command,
//     bash .ci/test.sh, which tooling reads from there;
//   - Links: every relative link in README.md and docs/*.md names a file or
//     directory of the repository.
//
// The program is built in a directory created for the test under the
// module root, so that it resolves github.com/fairrw/rwlock and rueidis as
// the module does; its name starts with "_" so that ./... patterns of other
// commands running meanwhile skip it, and it is removed at the end.
func TestReadme(t *testing.T) {
	root := ".." // go test runs in fairrw/
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Program", func(t *testing.T) {
		src, ok := firstGoBlock(readme)
		if !ok {
			t.Fatal("README.md has no ```go block")
		}
		if !bytes.HasPrefix(src, []byte("package main\n")) {
			t.Fatalf("the README's first ```go block does not start with \"package main\": a reader cannot run it as pasted:\n%s", src)
		}
		formatted, err := format.Source(src)
		if err != nil {
			t.Fatalf("the README's program does not parse: %v\n%s", err, src)
		}
		if !bytes.Equal(formatted, src) {
			t.Errorf("the README's program is not gofmt-formatted; gofmt gives:\n%s", formatted)
		}

		goCmd := goCommand(t)
		dir, err := os.MkdirTemp(root, "_readme-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		pkg := "./" + filepath.Base(dir)
		// The same -race as this test binary's, so that the build reuses the
		// dependencies go test has just compiled.
		var flags []string
		if raceEnabled() {
			flags = append(flags, "-race")
		}
		run := func(args ...string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, goCmd, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go %s: %v\n%s\nthe README's program:\n%s", strings.Join(args, " "), err, out, src)
			}
		}
		run(append(append([]string{"build"}, flags...), "-o", filepath.Join(t.TempDir(), "readme-program"), pkg)...)
		run(append(append([]string{"vet"}, flags...), pkg)...)
	})

	t.Run("TestCommand", func(t *testing.T) {
		const want = "bash .ci/test.sh"
		_, section, ok := strings.Cut(string(readme), "\n## Tests\n")
		if !ok {
			t.Fatal(`README.md has no section "## Tests"`)
		}
		block, ok := firstBlock(section, "```sh\n")
		if !ok {
			t.Fatal(`the section "## Tests" of README.md has no sh block`)
		}
		if first, _, _ := strings.Cut(block, "\n"); first != want {
			t.Fatalf(`the first command of "## Tests" is %q, want %q`, first, want)
		}
	})

	t.Run("Links", func(t *testing.T) {
		files := []string{filepath.Join(root, "README.md")}
		docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, docs...)
		link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range link.FindAllSubmatch(text, -1) {
				target := string(m[1])
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				file := f
				if path != "" {
					file = filepath.Join(filepath.Dir(f), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s links to %s, which does not exist", f, target)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				linked, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(headingAnchors(linked), anchor) {
					t.Errorf("%s links to %s, but %s has no heading with that anchor", f, target, file)
				}
			}
		}
	})
}

// firstGoBlock returns the first ```go block of a Markdown text.
func firstGoBlock(md []byte) ([]byte, bool) {
	block, ok := firstBlock(string(md), "```go\n")
	return []byte(block), ok
}

// firstBlock returns the body of the first fenced block opened by fence
// (a line of its own) in md.
func firstBlock(md, fence string) (string, bool) {
	i := strings.Index(md, "\n"+fence)
	if i < 0 {
		return "", false
	}
	body := md[i+1+len(fence):]
	end := strings.Index(body, "\n```\n")
	if end < 0 {
		return "", false
	}
	return body[:end+1], true
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text: lower case, spaces as hyphens, punctuation dropped.
func headingAnchors(md []byte) []string {
	var anchors []string
	inCode := false
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchors = append(anchors, b.String())
	}
	return anchors
}

// goCommand returns the go command of the toolchain running the test (its
// GOROOT's), else the one in PATH.
func goCommand(t *testing.T) string {
	t.Helper()
	p := filepath.Join(build.Default.GOROOT, "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command in %s or in PATH: %v", build.Default.GOROOT, err)
	}
	return p
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
